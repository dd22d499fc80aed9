/** Entry points: the GPU panel and its status bar readout, the Experiment panel, the run card's widget view. */
import { experimentPlugin } from './experiment/plugin';
import { gpuPlugin, statusBarPlugin } from './gpu/plugin';
import { runCardPlugin } from './runcard/plugin';

export default [gpuPlugin, statusBarPlugin, experimentPlugin, runCardPlugin];
