/** Where a GPU chart's run labels go: newest first, none over another; runs left out counted in "+N". */

/** Rows of labels at the top of the chart (nested runs start at the same place). */
export const LABEL_ROWS = 2;
/** A label is shown with this much room (about six letters and the ellipsis), or its whole name. */
export const LABEL_SHOWN_PX = 52;
/** A run starting this close to the right edge has its label moved left, so that a few letters show. */
export const LABEL_MIN_PX = 64;
/** The width of a "+N" label (up to "+99"). */
export const MORE_PX = 30;
/** A run left out joins the nearest "+N" unless a new one could go this much nearer its band. */
export const JOIN_PX = LABEL_SHOWN_PX;

/** A run to label: where its band starts and how wide its whole label is, in pixels. */
export interface IRunAnchor {
  start: number;
  wanted: number;
}

/** A label's row and its left edge and width in pixels from the plot's left edge. */
export interface ILabelBox {
  row: number;
  left: number;
  width: number;
}

/** The label of run `run` (its index in the anchors). */
export interface IRunLabel extends ILabelBox {
  kind: 'run';
  run: number;
}

/** A "+N" for the runs left out nearby (their indices, oldest first). */
export interface IMoreLabel extends ILabelBox {
  kind: 'more';
  runs: number[];
}

export type LabelItem = IRunLabel | IMoreLabel;

/** The labels laid out so far. */
interface ILayout {
  taken: Taken;
  labels: IRunLabel[];
  more: IMoreLabel[];
}

/**
 * Lay out the labels of runs (`anchors`, oldest first) in a plot `width` pixels wide, greedily, the
 * newest run first: a run's label starts where its band does (moved left near the right edge), in the
 * first row where its whole name fits or else the row with most room, reaching at most to the next
 * label in that row; it is shown only with `LABEL_SHOWN_PX` of room (or its whole name). A run left
 * out is counted in the nearest "+N", unless a new one could go more than `JOIN_PX` nearer its band
 * (in the free place nearest it); where no place is left, the last labels placed give way to it.
 * So no two labels overlap, all stay in the plot, the newest run is always labelled, and each run is
 * labelled or counted once (with two rows or more, in a plot at least `MORE_PX` wide).
 */
export function layoutRunLabels(
  anchors: IRunAnchor[],
  width: number,
  rows: number = LABEL_ROWS
): LabelItem[] {
  const layout: ILayout = { taken: new Taken(rows, width), labels: [], more: [] };
  for (let i = anchors.length - 1; i >= 0; i--) {
    const label = placeRun(layout.taken, anchors[i], width, i);
    if (label !== null) {
      layout.labels.push(label);
      layout.taken.add(label);
    } else {
      countRun(layout, i, Math.max(0, Math.min(anchors[i].start, width)));
    }
  }
  layout.more.forEach(item => item.runs.sort((a, b) => a - b));
  return [...layout.labels, ...layout.more];
}

/** Count run `run`, whose band starts at `at`, in a "+N" (see `layoutRunLabels`). */
function countRun(layout: ILayout, run: number, at: number): void {
  const { taken, labels, more } = layout;
  const near = nearest(more, at);
  let slot = taken.slotNear(at, MORE_PX);
  const slotGap = slot === null ? Infinity : gap({ ...slot, width: MORE_PX }, at);
  if (near !== null && gap(near, at) <= slotGap + JOIN_PX) {
    near.runs.push(run);
    return;
  }
  // No place left: the last labels placed (never the newest run's) give way to the "+N".
  const dropped: IRunLabel[] = [];
  while (slot === null && labels.length > 1) {
    const label = labels.pop()!;
    taken.remove(label);
    dropped.push(label);
    slot = taken.slotNear(at, MORE_PX);
  }
  if (slot === null) {
    // (Only with one row, or a plot narrower than a "+N": the run is named on its band alone.)
    dropped.reverse().forEach(label => {
      labels.push(label);
      taken.add(label);
    });
    return;
  }
  const added: IMoreLabel = {
    kind: 'more',
    runs: [run, ...dropped.map(label => label.run)],
    ...slot,
    width: MORE_PX
  };
  more.push(added);
  taken.add(added);
}

/** The label of run `run` where it fits, or `null`. */
function placeRun(taken: Taken, anchor: IRunAnchor, width: number, run: number): IRunLabel | null {
  const wanted = Math.min(Math.max(1, anchor.wanted), width);
  const left = Math.max(0, Math.min(anchor.start, width - Math.min(wanted, LABEL_MIN_PX)));
  const rooms = taken.rooms(left);
  const whole = rooms.findIndex(room => room >= wanted);
  const row = whole >= 0 ? whole : rooms.indexOf(Math.max(...rooms));
  if (rooms[row] < Math.min(wanted, LABEL_SHOWN_PX)) {
    return null;
  }
  return { kind: 'run', run, row, left, width: Math.min(wanted, rooms[row]) };
}

/** How far `at` is from a label's span (0 within it). */
function gap(box: { left: number; width: number }, at: number): number {
  return Math.max(0, box.left - at, at - box.left - box.width);
}

/** The "+N" nearest `at`, or `null`. */
function nearest(more: IMoreLabel[], at: number): IMoreLabel | null {
  let best: IMoreLabel | null = null;
  for (const item of more) {
    if (best === null || gap(item, at) < gap(best, at)) {
      best = item;
    }
  }
  return best;
}

/** The spans of each row taken by labels so far. */
class Taken {
  constructor(rows: number, width: number) {
    this._rows = Array.from({ length: rows }, () => []);
    this._width = width;
  }

  add(box: ILabelBox): void {
    this._rows[box.row].push(box);
  }

  remove(box: ILabelBox): void {
    const row = this._rows[box.row];
    row.splice(row.indexOf(box), 1);
  }

  /** Per row, the room from `left` to the next label or the edge (0 where `left` is taken). */
  rooms(left: number): number[] {
    return this._rows.map(boxes => {
      let room = this._width - left;
      for (const box of boxes) {
        if (box.left <= left && left < box.left + box.width) {
          return 0;
        }
        if (box.left > left) {
          room = Math.min(room, box.left - left);
        }
      }
      return room;
    });
  }

  /** The free place `size` pixels wide nearest `at`, in the lowest row among equally near ones, or `null`. */
  slotNear(at: number, size: number): { row: number; left: number } | null {
    let best: { row: number; left: number; distance: number } | null = null;
    for (let row = 0; row < this._rows.length; row++) {
      for (const [from, to] of this._gaps(row)) {
        const left = Math.max(from, Math.min(at, to - size));
        const distance = Math.abs(left - at);
        if (to - from >= size && (best === null || distance < best.distance)) {
          best = { row, left, distance };
        }
      }
    }
    return best === null ? null : { row: best.row, left: best.left };
  }

  /** The free spans of a row, left to right. */
  private _gaps(row: number): [number, number][] {
    const gaps: [number, number][] = [];
    let from = 0;
    for (const box of [...this._rows[row]].sort((a, b) => a.left - b.left)) {
      gaps.push([from, box.left]);
      from = Math.max(from, box.left + box.width);
    }
    gaps.push([from, this._width]);
    return gaps;
  }

  private _rows: ILabelBox[][];
  private _width: number;
}
