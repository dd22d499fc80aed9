/** Unit tests of a job's permissions from the Experiment panel: one GET to list, one JSON PUT per grant. */
import { describe, expect, it } from 'vitest';

import { JobAccess } from '../experiment/jobAccess';

describe('JobAccess', () => {
  it('lists a job’s permissions and puts each grant as JSON, for a user or a group', async () => {
    // Given a server that answers every call with the job's permissions
    const calls: [string, RequestInit | undefined][] = [];
    const listing = {
      kind: 'job',
      name: 'job-1',
      owner: 'alice',
      your_level: 'IS_OWNER',
      grants: [],
      from_schedule: null
    };
    const access = new JobAccess(async <T>(endpoint: string, init?: RequestInit) => {
      calls.push([endpoint, init]);
      return listing as T;
    });
    // When the dialog lists them, grants bob CAN_VIEW, gives the ml group CAN_MANAGE, then takes bob's back
    expect((await access.get('job-1')).owner).toBe('alice');
    await access.grant('job-1', { user: 'bob' }, 'CAN_VIEW');
    await access.grant('job-1', { group: 'ml' }, 'CAN_MANAGE');
    await access.grant('job-1', { user: 'bob' }, null);
    // Then one GET and a JSON PUT per grant, on the job's permissions route
    expect(calls.map(([endpoint, init]) => `${init?.method ?? 'GET'} ${endpoint}`)).toEqual([
      'GET jobs/job-1/permissions',
      'PUT jobs/job-1/permissions',
      'PUT jobs/job-1/permissions',
      'PUT jobs/job-1/permissions'
    ]);
    expect(calls.slice(1).map(([, init]) => JSON.parse(init!.body as string))).toEqual([
      { user: 'bob', level: 'CAN_VIEW' },
      { group: 'ml', level: 'CAN_MANAGE' },
      { user: 'bob', level: null }
    ]);
    expect((calls[1][1]!.headers as Record<string, string>)['Content-Type']).toBe(
      'application/json'
    );
  });

  it('passes the server’s refusal on', async () => {
    const access = new JobAccess(async () => {
      throw new Error("unknown user 'bob'");
    });
    await expect(access.grant('job-1', { user: 'bob' }, 'CAN_VIEW')).rejects.toThrow(
      "unknown user 'bob'"
    );
  });
});
