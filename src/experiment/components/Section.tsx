/** A section of the Experiment panel: a header that collapses it, with its count; its tools and list while expanded. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { countLabel, ISectionCount, SectionId } from '../sections';

export interface ISectionProps {
  id: SectionId;
  /** The section's own class (`jp-Air-runs-section`, ...). */
  className: string;
  title: string;
  counted: ISectionCount;
  collapsed: boolean;
  onToggle: () => void;
  /** Bumped to scroll the section into view (0: never asked). */
  scrollTick?: number;
  /** Controls of the header (the order of the runs, Compare), shown while expanded. */
  tools?: React.ReactNode;
  trans: TranslationBundle;
  children: React.ReactNode;
}

export function Section(props: ISectionProps): JSX.Element {
  const { id, className, title, counted, collapsed, onToggle, scrollTick, tools, trans } = props;
  const ref = React.useRef<HTMLElement>(null);
  React.useEffect(() => {
    if (scrollTick) {
      ref.current?.scrollIntoView?.({ block: 'start' });
    }
  }, [scrollTick]);
  const count = countLabel(id, counted, trans);
  return (
    <section
      ref={ref}
      className={`jp-Air-section ${className}${collapsed ? ' jp-mod-collapsed' : ''}`}
      data-section={id}
    >
      <div className="jp-Air-section-title">
        <button
          className="jp-Air-section-toggle"
          aria-expanded={!collapsed}
          title={collapsed ? trans.__('Show %1', title) : trans.__('Hide %1', title)}
          onClick={onToggle}
        >
          <span className="jp-Air-section-caret" aria-hidden="true" />
          <span className="jp-Air-section-name">{title}</span>
          <span className="jp-Air-section-count" title={count.title}>
            {counted.active > 0 ? (
              <span className="jp-Air-status-dot jp-Air-status-RUNNING" aria-hidden="true" />
            ) : null}
            {count.text}
          </span>
        </button>
        {collapsed ? null : tools}
      </div>
      {/* Kept while hidden, so that expanding it again does not scroll to a job shown before. */}
      <div className="jp-Air-section-body" hidden={collapsed}>
        {props.children}
      </div>
    </section>
  );
}
