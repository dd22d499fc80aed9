/** What the notification after Run workload… says and offers: the job started (its Logs), or the schedule kept. */
import type { TranslationBundle } from '@jupyterlab/translation';

import { scheduleKept } from './schedules';
import type { SubmitAnswer } from './tokens';

/** A button of the notification (the shape of JupyterLab's `Notification.IAction`). */
export interface INoticeAction {
  label: string;
  caption: string;
  displayType?: 'accent';
  callback: () => void;
}

/** What the buttons do: open a job's log, or show the job or the Schedules section in the Experiment panel. */
export interface INoticeHandlers {
  openLogs: (jobRunId: string) => void;
  showJob: (jobRunId: string) => void;
  showSchedules: () => void;
}

export function submittedNotice(
  answer: SubmitAnswer,
  path: string,
  handlers: INoticeHandlers,
  trans: TranslationBundle
): { message: string; actions: INoticeAction[] } {
  const openInPanel = (show: () => void): INoticeAction => ({
    label: trans.__('Open in panel'),
    caption: trans.__('Show it in the Experiment panel'),
    callback: show
  });
  if ('schedule' in answer) {
    return {
      message: scheduleKept(answer, trans),
      actions: [openInPanel(handlers.showSchedules)]
    };
  }
  const jobRunId = answer.job_run_id;
  return {
    // The file's name alone: a toast cuts its text at 140 characters.
    message: trans.__('Job %1 started from %2.', jobRunId, path.split('/').pop()),
    actions: [
      {
        label: trans.__('Logs'),
        caption: trans.__('Follow its output in a Logs tab'),
        displayType: 'accent',
        callback: () => handlers.openLogs(jobRunId)
      },
      openInPanel(() => handlers.showJob(jobRunId))
    ]
  };
}
