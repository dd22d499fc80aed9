import 'uplot/dist/uPlot.min.css';
import './base.css';
import './charts.css';
import './runcard.css';
import './experiment.css';
import './logs.css';
import './nodes.css';
import './processes.css';
