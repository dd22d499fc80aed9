/** Unit tests of the version comparison between this page and the server extension. */
import { describe, expect, it } from 'vitest';

import packageJson from '../../package.json';
import { FRONTEND_VERSION, sameVersion } from '../version';

describe('versions', () => {
  it('takes the frontend version from package.json', () => {
    expect(FRONTEND_VERSION).toBe(packageJson.version);
  });

  it('sees the npm and the Python spelling of one release as the same', () => {
    // Given versions as package.json and as the Python package write them, Then they match
    expect(sameVersion('0.1.0', '0.1.0')).toBe(true);
    expect(sameVersion('0.2.0-alpha.1', '0.2.0a1')).toBe(true);
    expect(sameVersion('0.2.0-alpha.1', '0.2.0alpha1')).toBe(true);
    expect(sameVersion('1.0.0-rc.2', '1.0.0rc2')).toBe(true);
    expect(sameVersion('1.0.0-beta.0', '1.0.0b0')).toBe(true);
  });

  it('tells different releases apart', () => {
    expect(sameVersion('0.1.0', '0.2.0')).toBe(false);
    expect(sameVersion('0.2.0-alpha.1', '0.2.0a2')).toBe(false);
    expect(sameVersion('0.2.0-alpha.1', '0.2.0b1')).toBe(false);
    expect(sameVersion('0.2.0', '0.2.0rc1')).toBe(false);
    expect(sameVersion('0.1.0', '0.0.0+unknown')).toBe(false);
  });
});
