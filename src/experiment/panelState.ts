/**
 * The Experiment panel as a person left it: which sections are collapsed (kept in the browser's storage), and
 * what to bring into view (a job just started, the section a notification points to).
 */
import { ISignal, Signal } from '@lumino/signaling';

import { SECTION_IDS, SectionId } from './sections';

/** Where the collapsed sections are kept: the browser's `localStorage`, or a stand-in (tests). */
export type SectionStorage = Pick<Storage, 'getItem' | 'setItem'>;

export const SECTIONS_STORAGE_KEY = 'jupyter-air:experiment-collapsed-sections';

/** A request to bring a section into view; `tick` tells two requests apart. */
export interface ISectionReveal {
  section: SectionId;
  tick: number;
}

/** What `follow` reads of the panel's model: the job it shows a person (just submitted or fired). */
export interface IRevealingModel {
  readonly changed: ISignal<any, void>;
  readonly revealedJob: string | null;
}

export class PanelState {
  /** `storage` absent: the browser's `localStorage` where it can be used; `null`: nothing is kept. */
  constructor(storage?: SectionStorage | null) {
    this._storage = storage === undefined ? browserStorage() : storage;
    this._collapsed = readCollapsed(this._storage);
  }

  /** Emitted when a section is collapsed or expanded, or something is to be brought into view. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  isCollapsed(section: SectionId): boolean {
    return this._collapsed.has(section);
  }

  setCollapsed(section: SectionId, collapsed: boolean): void {
    if (this._setCollapsed(section, collapsed)) {
      this._changed.emit();
    }
  }

  toggle(section: SectionId): void {
    this.setCollapsed(section, !this.isCollapsed(section));
  }

  /** The job shown to a person (highlighted): the last one revealed. */
  get revealedJob(): string | null {
    return this._revealedJob;
  }

  /** Bumped each time a job is revealed, so that its row is scrolled to again. */
  get jobRevealTick(): number {
    return this._jobRevealTick;
  }

  /** The latest request to bring a section into view, or `null`. */
  get sectionReveal(): ISectionReveal | null {
    return this._sectionReveal;
  }

  /** Show `jobRunId`: Workloads expanded, its row highlighted and scrolled to (again on each call). */
  revealJob(jobRunId: string): void {
    this._setCollapsed('workloads', false);
    this._markJob(jobRunId);
  }

  /** Show a section: expanded and scrolled to (again on each call). */
  revealSection(section: SectionId): void {
    this._setCollapsed(section, false);
    this._sectionReveal = { section, tick: (this._sectionReveal?.tick ?? 0) + 1 };
    this._changed.emit();
  }

  /**
   * Mark each job the model newly shows (a workload submitted, a schedule run now) and scroll to it; a
   * Workloads the person collapsed stays so (its count says a job runs).
   */
  follow(model: IRevealingModel): void {
    let seen = model.revealedJob;
    model.changed.connect(() => {
      const job = model.revealedJob;
      if (job !== seen && job !== null) {
        this._markJob(job);
      }
      seen = job;
    });
  }

  private _markJob(jobRunId: string): void {
    this._revealedJob = jobRunId;
    this._jobRevealTick += 1;
    this._changed.emit();
  }

  /** Change and keep the section's state; true when it changed. */
  private _setCollapsed(section: SectionId, collapsed: boolean): boolean {
    if (collapsed === this._collapsed.has(section)) {
      return false;
    }
    if (collapsed) {
      this._collapsed.add(section);
    } else {
      this._collapsed.delete(section);
    }
    try {
      this._storage?.setItem(SECTIONS_STORAGE_KEY, JSON.stringify([...this._collapsed]));
    } catch {
      // Storage full or refused: the state holds for this page only.
    }
    return true;
  }

  private _changed = new Signal<this, void>(this);
  private _collapsed: Set<SectionId>;
  private _jobRevealTick = 0;
  private _revealedJob: string | null = null;
  private _sectionReveal: ISectionReveal | null = null;
  private _storage: SectionStorage | null;
}

function browserStorage(): SectionStorage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}

/** The sections kept collapsed; anything unreadable counts as none. */
function readCollapsed(storage: SectionStorage | null): Set<SectionId> {
  try {
    const kept: unknown = JSON.parse(storage?.getItem(SECTIONS_STORAGE_KEY) ?? '[]');
    const ids = Array.isArray(kept) ? kept : [];
    return new Set(SECTION_IDS.filter(id => ids.includes(id)));
  } catch {
    return new Set();
  }
}
