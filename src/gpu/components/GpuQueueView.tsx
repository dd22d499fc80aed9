/** The GPU queue in the GPU panel: who holds which GPUs since when, then who waits, in order, and why. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatClock } from '../../format';
import type { IHeldClaim, IQueuedClaim } from '../queue';

export interface IGpuQueueViewProps {
  held: IHeldClaim[];
  queued: IQueuedClaim[];
  trans: TranslationBundle;
}

export function GpuQueueView(props: IGpuQueueViewProps): JSX.Element {
  const { held, queued, trans } = props;
  const what = (claim: IHeldClaim | IQueuedClaim) =>
    claim.kind === 'job'
      ? trans.__("%1's job %2", claim.user, claim.label)
      : trans.__("%1's call %2", claim.user, claim.label);
  return (
    <div className="jp-Air-gpu-queue">
      <div className="jp-Air-section-title">{trans.__('GPU queue')}</div>
      <ul className="jp-Air-queue-list">
        {held.map(claim => (
          <li key={claim.claim_id} className="jp-Air-queue-held" data-claim-id={claim.claim_id}>
            <span className="jp-Air-queue-gpus">
              {claim.pool
                ? trans._n('%1 GPU of %2', '%1 GPUs of %2', claim.count, claim.pool)
                : trans._n('GPU %2', 'GPUs %2', claim.gpus.length, claim.gpus.join(','))}
            </span>
            <span className="jp-Air-queue-what">{what(claim)}</span>
            <span className="jp-Air-queue-since">
              {trans.__('since %1', formatClock(claim.granted_ms))}
            </span>
          </li>
        ))}
        {queued.map(claim => (
          <li
            key={claim.claim_id}
            className="jp-Air-queue-waiting"
            data-claim-id={claim.claim_id}
            title={claim.reason}
          >
            <span className="jp-Air-queue-position">{`${claim.position}.`}</span>
            <span className="jp-Air-queue-what">{what(claim)}</span>
            <span className="jp-Air-queue-count">
              {trans._n('waits for %1 GPU', 'waits for %1 GPUs', claim.count)}
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}
