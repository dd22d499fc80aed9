import 'uplot/dist/uPlot.min.css';
import './base.css';
import './runcard.css';
import './experiment.css';
import './nodes.css';
