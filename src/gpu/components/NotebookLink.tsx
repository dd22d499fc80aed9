/** A notebook's path that opens the notebook. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

export function NotebookLink(props: {
  path: string;
  onOpenPath: (path: string) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { path, onOpenPath, trans } = props;
  return (
    <button
      className="jp-Air-process-path"
      title={trans.__('Open %1', path)}
      onClick={() => onOpenPath(path)}
    >
      {path}
    </button>
  );
}
