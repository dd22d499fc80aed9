/** What the panel waits for on a job it has just started. */
import type { ExperimentModel } from './model';
import { ACTIVE_JOB_STATUSES } from './tokens';

/**
 * Resolves `true` once the job has an attempt (so a log to follow), as the model's job list shows it;
 * `false` if it ends, or leaves the list, without one.
 */
export function jobStarted(model: ExperimentModel, jobRunId: string): Promise<boolean> {
  return new Promise(resolve => {
    const check = () => {
      const job = model.jobs.find(held => held.job_run_id === jobRunId);
      const started = !!job && job.attempts.length > 0;
      if (started || !job || !ACTIVE_JOB_STATUSES.includes(job.status)) {
        model.changed.disconnect(check);
        resolve(started);
      }
    };
    model.changed.connect(check);
    check();
  });
}
