/** Unit tests of sharing an experiment from the Experiment panel: asked once, one POST per grant. */
import { describe, expect, it } from 'vitest';

import { Sharing } from '../experiment/sharing';

describe('Sharing', () => {
  it('asks the server once whether it can share, and posts each grant as JSON', async () => {
    // Given a server that can share
    const calls: [string, RequestInit | undefined][] = [];
    const sharing = new Sharing(async <T>(endpoint: string, init?: RequestInit) => {
      calls.push([endpoint, init]);
      return (
        init?.method === 'POST'
          ? { experiment_name: 'e', experiment_id: '1', user: 'bob', level: 'READ', server: 's' }
          : { available: true, server: 'https://mlflow.example.org', reason: null }
      ) as T;
    });
    // When the panel asks twice whether it can, and shares once, then takes the grant back
    expect((await sharing.info()).available).toBe(true);
    await sharing.info();
    expect((await sharing.share('/Shared/x', 'bob', 'READ')).level).toBe('READ');
    await sharing.share('/Shared/x', 'bob', null);
    // Then one GET, and a JSON POST per grant naming the experiment, the user and the level (null: take back)
    expect(calls.map(([endpoint, init]) => `${init?.method ?? 'GET'} ${endpoint}`)).toEqual([
      'GET experiments/share',
      'POST experiments/share',
      'POST experiments/share'
    ]);
    expect(JSON.parse(calls[1][1]!.body as string)).toEqual({
      experiment: '/Shared/x',
      user: 'bob',
      level: 'READ'
    });
    expect(JSON.parse(calls[2][1]!.body as string).level).toBeNull();
    expect((calls[1][1]!.headers as Record<string, string>)['Content-Type']).toBe(
      'application/json'
    );
  });

  it('takes a server that cannot answer (an older extension) as not able to share', async () => {
    const sharing = new Sharing(async () => {
      throw new Error('404');
    });
    expect(await sharing.info()).toEqual({ available: false, server: null, reason: null });
  });
});
