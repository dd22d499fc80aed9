/** Watches pointer and keyboard activity in the page, for the inactivity pause. */
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

const ACTIVITY_EVENTS = ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart'];

/** Call `onActivity` (at most once a second) whenever the user points, scrolls or types. */
export function trackActivity(target: EventTarget, onActivity: () => void): IDisposable {
  let last = 0;
  const listener = () => {
    const now = Date.now();
    if (now - last >= 1000) {
      last = now;
      onActivity();
    }
  };
  const options = { capture: true, passive: true };
  ACTIVITY_EVENTS.forEach(name => target.addEventListener(name, listener, options));
  return new DisposableDelegate(() =>
    ACTIVITY_EVENTS.forEach(name => target.removeEventListener(name, listener, options))
  );
}
