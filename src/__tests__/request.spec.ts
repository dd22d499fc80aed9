/** Unit tests of requestAPI: URLs, JSON, and the errors that tell "missing" from "failing". */
import { ServerConnection } from '@jupyterlab/services';
import { describe, expect, it, vi } from 'vitest';

import { requestAPI, RequestError } from '../request';

/** The RequestError a call rejects with. */
async function failure(call: Promise<unknown>): Promise<RequestError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e
  );
  expect(error).toBeInstanceOf(RequestError);
  return error as RequestError;
}

function settingsAnswering(fetch: (request: Request) => Promise<Response>) {
  const spy = vi.fn(fetch);
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/lab-base/',
    fetch: spy as unknown as typeof globalThis.fetch
  });
  return { settings, spy };
}

describe('requestAPI', () => {
  it('calls the route under the base URL and returns its JSON', async () => {
    // Given a server answering 200 with JSON
    const { settings, spy } = settingsAnswering(async () => new Response('{"version": "0.1.0"}'));
    // When the version is requested
    const answer = await requestAPI<{ version: string }>('version', {}, settings);
    // Then the body is returned and the path is under the base URL
    expect(answer).toEqual({ version: '0.1.0' });
    const url = new URL(spy.mock.calls[0][0].url);
    expect(url.pathname).toBe('/lab-base/jupyter-air/version');
  });

  it('keeps the query of the endpoint', async () => {
    // Given a server answering 200
    const { settings, spy } = settingsAnswering(async () => new Response('{}'));
    // When samples since a timestamp are requested
    await requestAPI('gpu?since=1764420000000', {}, settings);
    // Then `since` is in the query
    const url = new URL(spy.mock.calls[0][0].url);
    expect(url.pathname).toBe('/lab-base/jupyter-air/gpu');
    expect(url.searchParams.get('since')).toBe('1764420000000');
  });

  it('says the server extension is missing on 404', async () => {
    // Given a server without the extension
    const { settings } = settingsAnswering(async () => new Response('Not found', { status: 404 }));
    // When the GPU route is requested, Then an "unavailable" error names the route and the fix
    const error = await failure(requestAPI('gpu?since=1', {}, settings));
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBe(404);
    expect(error.message).toContain('jupyter-air/gpu answered 404');
    expect(error.message).toContain('not installed or not enabled');
  });

  it('says the server is unreachable on a network error', async () => {
    // Given a fetch that fails
    const { settings } = settingsAnswering(async () => {
      throw new TypeError('Failed to fetch');
    });
    // When the GPU route is requested, Then an "unavailable" error says so
    const error = await failure(requestAPI('gpu', {}, settings));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toContain('could not be reached');
  });

  it("passes on the server's message for other errors", async () => {
    // Given a server answering 400 with a Jupyter error body
    const body = JSON.stringify({ message: "Query argument 'since' must be an integer" });
    const { settings } = settingsAnswering(async () => new Response(body, { status: 400 }));
    // When the GPU route is requested, Then a "server" error carries the message
    const error = await failure(requestAPI('gpu?since=x', {}, settings));
    expect(error.kind).toBe('server');
    expect(error.status).toBe(400);
    expect(error.message).toBe(
      "jupyter-air/gpu answered 400: Query argument 'since' must be an integer"
    );
  });

  it('tells a job the server does not have from a missing extension, both 404', async () => {
    // Given the extension answering 404 with its message (a job it does not have)
    const body = JSON.stringify({ message: 'No job run job-0123456789ab under AIR_HOME' });
    const { settings } = settingsAnswering(async () => new Response(body, { status: 404 }));
    // When that job's log is requested, Then the error is the server's, not "not installed"
    const error = await failure(requestAPI('jobs/job-0123456789ab/logs', {}, settings));
    expect(error.kind).toBe('server');
    expect(error.status).toBe(404);
    expect(error.message).toBe(
      'jupyter-air/jobs/job-0123456789ab/logs answered 404: No job run job-0123456789ab under AIR_HOME'
    );
  });

  it('keeps every error a 400 answer lists', async () => {
    // Given a workload file with two errors
    const body = JSON.stringify({
      message: 'train.yaml is not a valid workload (2 errors).',
      errors: ['train.yaml:3: command: field required', 'train.yaml:5: max_retries: not an integer']
    });
    const { settings } = settingsAnswering(async () => new Response(body, { status: 400 }));
    // When it is submitted, Then the error carries both lines
    const error = await failure(requestAPI('jobs', { method: 'POST' }, settings));
    expect(error.status).toBe(400);
    expect(error.errors).toEqual([
      'train.yaml:3: command: field required',
      'train.yaml:5: max_retries: not an integer'
    ]);
  });

  it('reports a body that is not JSON', async () => {
    // Given a proxy answering HTML
    const { settings } = settingsAnswering(async () => new Response('<html>', { status: 502 }));
    // Then the error says the body is not JSON
    const error = await failure(requestAPI('gpu', {}, settings));
    expect(error.kind).toBe('server');
    expect(error.message).toContain('not JSON');
  });
});
