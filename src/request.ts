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
    readonly status: number | null
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

/** The request seam of the models: `requestAPI` in the application, a fake server in unit tests. */
export type Requester = <T>(endpoint: string, init?: RequestInit) => Promise<T>;

/**
 * Call `{base_url}jupyter-air/<endpoint>` and return its JSON body.
 *
 * Rejects with a `RequestError`: kind `unavailable` for a network error or a 404
 * (server extension not installed or not enabled), kind `server` otherwise.
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
  if (response.status === 404) {
    throw new RequestError(
      'The jupyter_air server extension is not installed or not enabled on this server ' +
        `(${route} answered 404). ` +
        'Install the jupyter_air Python package where the server runs and restart it.',
      'unavailable',
      404
    );
  }
  let data: unknown = null;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new RequestError(
        `${route} answered ${response.status} with a body that is not JSON.`,
        'server',
        response.status
      );
    }
  }
  if (!response.ok) {
    const detail = (data as { message?: string } | null)?.message ?? response.statusText;
    throw new RequestError(
      `${route} answered ${response.status}: ${detail}`,
      'server',
      response.status
    );
  }
  return data as T;
}
