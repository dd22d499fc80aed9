/** The GPU icon of the sidebar tab. */
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path fill-rule="evenodd" d="M2 5h18a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2H6v2H4v-2H2zm2 2v9h16V7zm5 1.5a3 3 0 1 1 0 6 3 3 0 0 1 0-6zm6 .5h3v1.5h-3zm0 2.5h3V13h-3z"/>
  </g>
</svg>`;

export const gpuIcon = new LabIcon({ name: 'jupyter-air:gpu', svgstr });
