/** The icons of jupyter_air's sidebar tabs. */
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path fill-rule="evenodd" d="M2 5h18a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2H6v2H4v-2H2zm2 2v9h16V7zm5 1.5a3 3 0 1 1 0 6 3 3 0 0 1 0-6zm6 .5h3v1.5h-3zm0 2.5h3V13h-3z"/>
  </g>
</svg>`;

export const gpuIcon = new LabIcon({ name: 'jupyter-air:gpu', svgstr });

const experimentSvg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path fill-rule="evenodd" d="M9 2h6v2h-1v5.2l5.6 9.3A2 2 0 0 1 17.9 21H6.1a2 2 0 0 1-1.7-2.5L10 9.2V4H9zm3 8.3L8.6 16h6.8z"/>
  </g>
</svg>`;

/** The flask of the Experiment panel's tab. */
export const experimentIcon = new LabIcon({
  name: 'jupyter-air:experiment',
  svgstr: experimentSvg
});
