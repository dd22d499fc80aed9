/** The one helper that calls the jupyter_air server extension. */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** Why a request failed: the extension is missing/unreachable, or it answered with an error. */
export type RequestErrorKind = 'unavailable' | 'server';

/** A failed call to the server extension, with a message a person can act on. */
export class RequestError extends Error {
  constructor(
    message: string,
    readonly kind: RequestErrorKind,
    readonly status: number | null,
    /** Every problem the server listed (`errors` of its answer), e.g. each error of a workload file. */
    readonly errors: string[] = []
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** The `message` and `errors` of an error answer of the server extension (`{"message": ..., "errors": [...]}`). */
function errorBody(data: unknown): { message: string | null; errors: string[] } {
  const body = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const message = typeof body.message === 'string' ? body.message : null;
  const errors = Array.isArray(body.errors)
    ? body.errors.filter((e): e is string => typeof e === 'string')
    : [];
  return { message, errors };
}

/** The request seam of the models: `requestAPI` in the application, a fake server in unit tests. */
export type Requester = <T>(endpoint: string, init?: RequestInit) => Promise<T>;

/**
 * Call `{base_url}jupyter-air/<endpoint>` and return its JSON body.
 *
 * Rejects with a `RequestError`: kind `unavailable` for a network error or a bare 404 (server
 * extension not installed or not enabled), kind `server` otherwise, with the server's message (a
 * 404 the extension answers with a message: a job, an attempt or a node it does not have).
 */
export async function requestAPI<T>(
  endpoint = '',
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'jupyter-air', endpoint);
  const route = `jupyter-air/${endpoint.split('?')[0]}`;
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new RequestError(
      `The Jupyter server could not be reached (${(error as Error).message}).`,
      'unavailable',
      null
    );
  }
  const text = await response.text();
  let data: unknown = null;
  try {
    data = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    data = undefined;
  }
  const { message, errors } = errorBody(data);
  if (response.status === 404 && message === null) {
    throw new RequestError(
      'The jupyter_air server extension is not installed or not enabled on this server ' +
        `(${route} answered 404). ` +
        'Install the jupyter_air Python package where the server runs and restart it.',
      'unavailable',
      404
    );
  }
  if (data === undefined) {
    throw new RequestError(
      `${route} answered ${response.status} with a body that is not JSON.`,
      'server',
      response.status
    );
  }
  if (!response.ok) {
    throw new RequestError(
      `${route} answered ${response.status}: ${message ?? response.statusText}`,
      'server',
      response.status,
      errors
    );
  }
  return data as T;
}
