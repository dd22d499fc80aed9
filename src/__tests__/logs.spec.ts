/** Unit tests of the Logs view's model: following a log by offset, whole lines, pausing while hidden. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { LogModel } from '../experiment/logModel';
import { RequestError } from '../request';
import { FakeRunsServer } from './fakeRuns';
import { advance } from './harness';

const SECOND = 1000;

let server: FakeRunsServer;

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeRunsServer();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('LogModel', () => {
  it('follows a growing log by offset, whole lines only, and stops once it is complete', async () => {
    // Given a running job with two lines written, the third being written
    server.logs.set('job-1', 'one\ntwo\nthr');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, intervalMs: SECOND });
    log.setVisible(true);
    await advance(0);
    expect(log.lines).toEqual(['one', 'two']);
    // When more output arrives, with a progress bar redrawing itself
    server.logs.set('job-1', 'one\ntwo\nthree\n10%\r50%\r100%\n');
    await advance(SECOND);
    // Then only the new part was asked for, and the bar shows its last state
    expect(server.requests[1]).toBe('GET jobs/job-1/logs?attempt=0&node=0&offset=8');
    expect(log.lines).toEqual(['one', 'two', 'three', '100%']);
    // When the attempt ends with a last unfinished line
    server.logs.set('job-1', 'one\ntwo\nthree\n10%\r50%\r100%\nbye');
    server.ended.add('job-1');
    await advance(SECOND);
    const count = server.calls.length;
    await advance(30 * SECOND);
    // Then it has every line and asks no more
    expect(log.lines).toEqual(['one', 'two', 'three', '100%', 'bye']);
    expect(log.complete).toBe(true);
    expect(server.calls).toHaveLength(count);
    log.dispose();
  });

  it('shows why a job’s logs are refused (no job grant), and follows them once the grant is given', async () => {
    // Given a job whose logs the server refuses to this user
    server.logs.set('job-1', 'epoch 1\n');
    const why =
      'You do not have permission to read the logs of job job-1 (alice’s). Ask a user with Can Manage ' +
      'permission on it, or an admin, to grant you at least Can View on the job.';
    server.failWith = new RequestError(
      `jupyter-air/jobs/job-1/logs answered 403: ${why}`,
      'server',
      403
    );
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, intervalMs: SECOND });
    log.setVisible(true);
    await advance(0);
    // Then the view's error names the job and whom to ask, and no line is shown
    expect(log.error?.status).toBe(403);
    expect(log.error?.message).toContain('grant you at least Can View on the job');
    expect(log.lines).toEqual([]);
    // When the grant is given, Then a later retry reads the log and the error is gone
    server.failWith = null;
    await advance(log.retryInMs ?? SECOND);
    expect(log.lines).toEqual(['epoch 1']);
    expect(log.error).toBeNull();
    log.dispose();
  });

  it('asks for the latest attempt first, then keeps to the one it got', async () => {
    server.logs.set('job-1', 'a\n');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, intervalMs: SECOND });
    log.setVisible(true);
    await advance(SECOND);
    expect(server.requests[0]).toBe('GET jobs/job-1/logs?attempt=-1&node=0&offset=0');
    expect(server.requests[1]).toBe('GET jobs/job-1/logs?attempt=0&node=0&offset=2');
    log.dispose();
  });

  it('pauses while its tab stays hidden, and reads on at once when shown again', async () => {
    // Given a log being followed every second, with a 30-second inactivity timeout
    server.logs.set('job-1', 'one\n');
    const log = new LogModel({
      jobRunId: 'job-1',
      request: server.request,
      intervalMs: SECOND,
      inactivityTimeoutSeconds: 30
    });
    log.setVisible(true);
    await advance(0);
    // When its tab is hidden for 40 s while the user works elsewhere
    log.setVisible(false);
    for (let t = 0; t < 40; t += 5) {
      log.notifyActivity();
      await advance(5 * SECOND);
    }
    const count = server.calls.length;
    await advance(60 * SECOND);
    // Then it stopped reading, and says so
    expect(server.calls).toHaveLength(count);
    expect(log.pausedAfterSeconds).toBe(30);
    // When the tab is shown again and the log has grown
    server.logs.set('job-1', 'one\ntwo\n');
    log.setVisible(true);
    await advance(0);
    // Then it read the new line at once
    expect(server.calls).toHaveLength(count + 1);
    expect(log.lines).toEqual(['one', 'two']);
    expect(log.paused).toBe(false);
    log.dispose();
  });

  it('keeps at most the last lines it may', async () => {
    server.logs.set('job-1', Array.from({ length: 30 }, (_, i) => `line ${i}\n`).join(''));
    server.ended.add('job-1');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, maxLines: 10 });
    log.setVisible(true);
    await advance(0);
    expect(log.lines).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i + 20}`));
    expect(log.droppedLines).toBe(20);
    log.dispose();
  });
});
