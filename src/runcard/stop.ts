/** The Stop button's request: the server records it and the busy kernel's wait loop acts on it. */
import type { Requester } from '../request';
import type { StopState } from './tokens';

/**
 * Ask the server to stop run `runId` (`POST jupyter-air/runs/<id>/stop`).
 *
 * The request never waits for the kernel, which is busy running the cell: the server records it and the
 * kernel's wait loop sees it within a fraction of a second, stops every process and ends the run KILLED.
 */
export async function requestStop(request: Requester, runId: string): Promise<StopState> {
  try {
    await request(`runs/${encodeURIComponent(runId)}/stop`, { method: 'POST' });
    return { phase: 'stopping' };
  } catch (error) {
    return { phase: 'error', message: (error as Error).message };
  }
}
