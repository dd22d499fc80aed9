/** What the headers of the Experiment panel's sections count: the runs, jobs and schedules listed, and those running. */
import type { TranslationBundle } from '@jupyterlab/translation';

import { ACTIVE_JOB_STATUSES, IJob, IRun, ISchedule } from './tokens';

/** The panel's sections, top to bottom. */
export type SectionId = 'runs' | 'workloads' | 'schedules';
export const SECTION_IDS: readonly SectionId[] = ['runs', 'workloads', 'schedules'];

export interface ISectionCount {
  /** Entries listed: top-level runs (nested calls are inside them), jobs, schedules. */
  count: number;
  /** True when there are more than listed (older runs not loaded yet). */
  more: boolean;
  /** Entries running now: runs RUNNING, jobs pending or running, schedules whose last job is. */
  active: number;
}

/** What the panel lists, as the model holds it. */
export interface IListed {
  topLevelRuns: IRun[];
  hasMore: boolean;
  jobs: IJob[];
  schedules: ISchedule[];
}

/** Each section's count; the runs count only while a notebook is followed (none are listed otherwise). */
export function sectionCounts(
  listed: IListed,
  notebookFollowed: boolean
): Record<SectionId, ISectionCount> {
  const runs = notebookFollowed ? listed.topLevelRuns : [];
  const jobActive = (job: IJob | null) => !!job && ACTIVE_JOB_STATUSES.includes(job.status);
  return {
    runs: {
      count: runs.length,
      more: notebookFollowed && listed.hasMore,
      active: runs.filter(run => run.status === 'RUNNING').length
    },
    workloads: {
      count: listed.jobs.length,
      more: false,
      active: listed.jobs.filter(jobActive).length
    },
    schedules: {
      count: listed.schedules.length,
      more: false,
      active: listed.schedules.filter(schedule => jobActive(schedule.last_job)).length
    }
  };
}

/** The count as its header shows it ("12", "50+") and in words on hover ("50+ runs, 1 running"). */
export function countLabel(
  section: SectionId,
  counted: ISectionCount,
  trans: TranslationBundle
): { text: string; title: string } {
  const text = counted.more ? `${counted.count}+` : String(counted.count);
  const words: Record<SectionId, string> = {
    runs: trans._n('%2 run', '%2 runs', counted.count, text),
    workloads: trans._n('%2 job', '%2 jobs', counted.count, text),
    schedules: trans._n('%2 schedule', '%2 schedules', counted.count, text)
  };
  const active: Record<SectionId, string> = {
    runs: trans.__('%1 running', counted.active),
    workloads: trans.__('%1 pending or running', counted.active),
    schedules: trans.__('%1 with its job running', counted.active)
  };
  const title = counted.active > 0 ? `${words[section]}, ${active[section]}` : words[section];
  return { text, title };
}
