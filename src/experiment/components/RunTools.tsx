/** The Runs header's tools: the order of the runs, and Compare for the runs ticked. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { RunOrder } from '../runs';

export function RunTools(props: {
  order: RunOrder;
  onOrder: (order: RunOrder) => void;
  chosen: number;
  compareUrl: string | null;
  onOpenUrl: (url: string) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { order, onOrder, chosen, compareUrl, onOpenUrl, trans } = props;
  return (
    <span className="jp-Air-section-tools">
      <select
        className="jp-Air-run-order"
        value={order}
        onChange={event => onOrder(event.target.value as RunOrder)}
        aria-label={trans.__('Order of the runs')}
        title={trans.__('Order of the runs listed here: newest, or most GPU energy, first')}
      >
        <option value="newest">{trans.__('Newest first')}</option>
        <option value="energy">{trans.__('Most energy first')}</option>
      </select>
      <button
        className="jp-Air-compare jp-mod-styled"
        disabled={compareUrl === null}
        title={
          chosen < 2
            ? trans.__('Select two or more runs to compare them in the MLflow UI')
            : trans.__('Compare the selected runs in the MLflow UI')
        }
        onClick={() => compareUrl && onOpenUrl(compareUrl)}
      >
        {chosen >= 2 ? trans.__('Compare (%1)', chosen) : trans.__('Compare')}
      </button>
    </span>
  );
}
