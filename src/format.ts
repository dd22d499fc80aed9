/** Human-readable units for the GPU resources panel. */
import type { TranslationBundle } from '@jupyterlab/translation';

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `1073741824` → `"1.0 GiB"`; `null` → `"–"`. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '–';
  }
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** A number with a unit, or `"–"` when the device cannot report it. */
export function formatValue(value: number | null | undefined, unit: string, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '–';
  }
  return `${value.toFixed(digits)}${unit}`;
}

/** `300` → `"5 minutes"`, `60` → `"1 minute"`, `90` → `"90 seconds"`, in the user's language. */
export function formatDuration(seconds: number, trans: TranslationBundle): string {
  if (seconds >= 60 && seconds % 60 === 0) {
    return trans._n('%1 minute', '%1 minutes', seconds / 60);
  }
  return trans._n('%1 second', '%1 seconds', seconds);
}

/** Local wall-clock time of an epoch-millisecond timestamp, e.g. `"14:03:27"`. */
export function formatClock(epochMs: number | null): string {
  if (epochMs === null) {
    return '–';
  }
  return new Date(epochMs).toLocaleTimeString([], { hour12: false });
}

/** `4.2s`, `1m 05s`, `2h 03m 04s` (as the cell output and the `air` command write it); `–` if unknown. */
export function formatElapsed(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) {
    return '–';
  }
  const seconds = ms / 1000;
  if (seconds < 60) {
    return `${seconds.toFixed(1)}s`;
  }
  const whole = Math.floor(seconds);
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const secs = String(whole % 60).padStart(2, '0');
  return hours > 0
    ? `${hours}h ${String(minutes).padStart(2, '0')}m ${secs}s`
    : `${minutes}m ${secs}s`;
}

/** `0.8686` → `"0.869 Wh"`, `1234.5` → `"1.23 kWh"`: three significant digits; `–` if unknown. */
export function formatEnergy(wattHours: number | null | undefined): string {
  if (wattHours === null || wattHours === undefined || !Number.isFinite(wattHours)) {
    return '–';
  }
  const [value, unit] = wattHours >= 1000 ? [wattHours / 1000, 'kWh'] : [wattHours, 'Wh'];
  return `${Number(value.toPrecision(3))} ${unit}`;
}
