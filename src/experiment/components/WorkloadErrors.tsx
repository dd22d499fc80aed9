/** Why a workload file was not submitted: every error of the file, each on its line, as text. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

export interface IWorkloadErrorsProps {
  /** The workload file, relative to the server's root. */
  path: string;
  /** The server's message (shown when it lists no errors: the file could not be read, a failure). */
  message: string;
  /** Every error of the file, e.g. `train.yaml:3: command: field required`. */
  errors: string[];
  trans: TranslationBundle;
}

export function WorkloadErrors(props: IWorkloadErrorsProps): JSX.Element {
  const { path, message, errors, trans } = props;
  return (
    <div className="jp-Air-workload-errors">
      {errors.length > 0 ? (
        <>
          <p>{trans._n('%2 has %1 error:', '%2 has %1 errors:', errors.length, path)}</p>
          <ul className="jp-Air-workload-error-list">
            {errors.map((error, i) => (
              <li key={i} className="jp-Air-workload-error">
                {error}
              </li>
            ))}
          </ul>
          <p>{trans.__('Fix them in the file and run it again; no job was started.')}</p>
        </>
      ) : (
        <p className="jp-Air-workload-error">{message}</p>
      )}
    </div>
  );
}
