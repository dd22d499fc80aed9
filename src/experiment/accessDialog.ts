/**
 * The Experiment panel's Access dialog of a job: its owner and grants (the schedule's too), and a form that gives a
 * user or a group a level, or takes it back. Names are shown as text, never as markup.
 */
import { Dialog, Notification, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { Grantee, IJobAccess, IJobGrant, JOB_LEVELS, JobAccess, JobLevel } from './jobAccess';

/** Show who may use job `jobRunId` and make the grant the person asks for; says why when it cannot. */
export async function showJobAccess(
  access: JobAccess,
  jobRunId: string,
  trans: TranslationBundle
): Promise<void> {
  let current: IJobAccess;
  try {
    current = await access.get(jobRunId);
  } catch (error) {
    await showErrorMessage(trans.__('Access to %1', jobRunId), reason(error));
    return;
  }
  const form = new AccessForm(current, trans);
  const answer = await showDialog({
    title: trans.__('Who may use %1', jobRunId),
    body: form,
    focusNodeSelector: 'input',
    buttons: [
      Dialog.cancelButton({ label: trans.__('Close') }),
      Dialog.okButton({ label: trans.__('Grant') })
    ]
  });
  const { who, level } = form.getValue();
  if (!answer.button.accept || who === null) {
    return;
  }
  const name = 'user' in who ? who.user : who.group;
  try {
    await access.grant(jobRunId, who, level);
    const done =
      level === null
        ? trans.__('%1 no longer has a grant on %2', name, jobRunId)
        : trans.__('%1 has %2 on %3', name, level, jobRunId);
    Notification.success(done, { autoClose: 5000 });
  } catch (error) {
    await showErrorMessage(trans.__('Access to %1 not changed', jobRunId), reason(error));
  }
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The dialog's body: who has which level, then whom to give which level. */
class AccessForm
  extends Widget
  implements Dialog.IBodyWidget<{ who: Grantee | null; level: JobLevel | null }>
{
  constructor(current: IJobAccess, trans: TranslationBundle) {
    super();
    this.addClass('jp-Air-access-form');
    const words: Record<JobLevel, string> = {
      CAN_VIEW: trans.__('Can View: status and logs'),
      CAN_MANAGE_RUN: trans.__('Can Manage Run: also cancel'),
      CAN_MANAGE: trans.__('Can Manage: also change access')
    };
    const table = document.createElement('table');
    table.className = 'jp-Air-access-grants';
    const row = (kind: string, name: string, level: string, by: string) => {
      const tr = table.insertRow();
      for (const text of [kind, name, level, by]) {
        tr.insertCell().textContent = text;
      }
    };
    row(trans.__('user'), current.owner, 'IS_OWNER', trans.__('submitted it'));
    const grant = (g: IJobGrant, via: string) =>
      row(
        g.user !== undefined ? trans.__('user') : trans.__('group'),
        g.user ?? g.group ?? '',
        g.level + via,
        trans.__('by %1', g.granted_by)
      );
    current.grants.forEach(g => grant(g, ''));
    const schedule = current.from_schedule;
    schedule?.grants.forEach(g => grant(g, ` (${trans.__('schedule %1', schedule.name)})`));
    const yours = document.createElement('p');
    yours.textContent = trans.__('Your level: %1', current.your_level ?? trans.__('none'));
    this._kind.setAttribute('aria-label', trans.__('User or group'));
    this._kind.add(new Option(trans.__('User'), 'user'));
    this._kind.add(new Option(trans.__('Group'), 'group'));
    this._name.className = 'jp-mod-styled';
    this._name.placeholder = trans.__('User or group name');
    this._name.setAttribute('aria-label', trans.__('User or group name'));
    this._level.setAttribute('aria-label', trans.__('Level'));
    for (const level of JOB_LEVELS) {
      this._level.add(new Option(words[level], level));
    }
    this._level.add(new Option(trans.__('No access (take the grant back)'), ''));
    const inputs = document.createElement('div');
    inputs.className = 'jp-Air-access-inputs';
    inputs.append(this._kind, this._name, this._level);
    this.node.append(table, yours, inputs);
  }

  getValue(): { who: Grantee | null; level: JobLevel | null } {
    const name = this._name.value.trim();
    const who = !name ? null : this._kind.value === 'group' ? { group: name } : { user: name };
    return { who, level: (this._level.value || null) as JobLevel | null };
  }

  private _kind = document.createElement('select');
  private _name = document.createElement('input');
  private _level = document.createElement('select');
}
