/**
 * Who may use an `air` job, for the Experiment panel's Permissions dialog: its owner and grants (`GET
 * jupyter-air/jobs/<id>/permissions`) and one grant (`PUT`).
 */
import type { Requester } from '../request';

/** The levels a user or group can be given on a job, from least to most (its submitter is `IS_OWNER`). */
export const JOB_LEVELS = ['CAN_VIEW', 'CAN_MANAGE_RUN', 'CAN_MANAGE'] as const;
export type JobLevel = (typeof JOB_LEVELS)[number];

/** A grant to one user or one group. */
export interface IJobGrant {
  user?: string;
  group?: string;
  level: JobLevel;
  granted_by: string;
  granted_ms: number;
}

/** Who may use a job, as `air permissions JOB -o json` prints it. */
export interface IJobAccess {
  kind: 'job' | 'schedule';
  name: string;
  owner: string;
  your_level: JobLevel | 'IS_OWNER' | null;
  grants: IJobGrant[];
  /** A job a schedule fired: the schedule's grants, which apply too. */
  from_schedule: { name: string; grants: IJobGrant[] } | null;
  /** After a grant: what was granted on the job's experiment, or why nothing was. */
  experiment_grant?: string;
}

/** Whom a grant is for: one user or one group. */
export type Grantee = { user: string } | { group: string };

export class JobAccess {
  constructor(private _request: Requester) {}

  /** The job's owner, its grants and the caller's level. */
  get(jobRunId: string): Promise<IJobAccess> {
    return this._request<IJobAccess>(this._endpoint(jobRunId));
  }

  /** Give `who` `level` on the job (null takes it back); rejects with the server's reason. */
  grant(jobRunId: string, who: Grantee, level: JobLevel | null): Promise<IJobAccess> {
    return this._request<IJobAccess>(this._endpoint(jobRunId), {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...who, level })
    });
  }

  private _endpoint(jobRunId: string): string {
    return `jobs/${encodeURIComponent(jobRunId)}/permissions`;
  }
}
