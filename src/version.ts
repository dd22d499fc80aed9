/** The frontend's own version, and comparing it with the server extension's. */
import { version } from '../package.json';

/** Version of this frontend; the Python package takes its version from the same package.json. */
export const FRONTEND_VERSION: string = version;

/**
 * Whether an npm version and a Python version name the same release.
 *
 * The Python package's version is derived from package.json, so `0.2.0-alpha.1` there is
 * `0.2.0a1` (or `0.2.0alpha1`) on the server: pre-release labels and separators are normalised.
 */
export function sameVersion(a: string, b: string): boolean {
  return normalize(a) === normalize(b);
}

const PRE_RELEASE: Record<string, string> = {
  a: 'a',
  alpha: 'a',
  b: 'b',
  beta: 'b',
  c: 'rc',
  pre: 'rc',
  preview: 'rc',
  rc: 'rc'
};

const VERSION =
  /^v?(\d+\.\d+\.\d+)(?:[-_.]?(alpha|beta|preview|pre|rc|a|b|c)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(\+.*)?$/;

function normalize(version: string): string {
  const text = version.trim().toLowerCase();
  const match = VERSION.exec(text);
  if (!match) {
    return text;
  }
  const [, release, label, preNumber, devNumber, local] = match;
  const pre = label ? `${PRE_RELEASE[label]}${preNumber || '0'}` : '';
  const dev = devNumber !== undefined ? `.dev${devNumber || '0'}` : '';
  return `${release}${pre}${dev}${local ?? ''}`;
}
