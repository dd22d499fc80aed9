/** Current values of every GPU: utilization, memory, temperature and power. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { seriesColorIndex } from '../charts';
import { formatBytes, formatValue } from '../../format';
import { latestValue } from '../history';
import type { IGpuDevice, IGpuHistory } from '../tokens';

export interface IDeviceListProps {
  devices: IGpuDevice[];
  history: IGpuHistory;
  trans: TranslationBundle;
}

export function DeviceList(props: IDeviceListProps): JSX.Element {
  const { devices, history, trans } = props;
  return (
    <ul className="jp-Air-devices">
      {devices.map((device, i) => {
        const memoryUsed = latestValue(history.gpus.memory_used_bytes[i]);
        return (
          <li key={device.index} className="jp-Air-device" data-gpu-index={device.index}>
            <div className="jp-Air-device-title">
              <span
                className="jp-Air-swatch"
                style={{ background: `var(--jp-Air-gpu-color-${seriesColorIndex(i)})` }}
              />
              <span className="jp-Air-device-index">{trans.__('GPU %1', device.index)}</span>
              <span className="jp-Air-device-name" title={device.name}>
                {device.name}
              </span>
            </div>
            <div className="jp-Air-device-values">
              <span className="jp-Air-value-utilization" title={trans.__('Utilization')}>
                {formatValue(latestValue(history.gpus.utilization_percent[i]), '%')}
              </span>
              <span className="jp-Air-value-memory" title={trans.__('Memory used / total')}>
                {formatBytes(memoryUsed)} / {formatBytes(device.memory_total_bytes)}
              </span>
              <span className="jp-Air-value-temperature" title={trans.__('Temperature')}>
                {formatValue(latestValue(history.gpus.temperature_celsius[i]), ' °C')}
              </span>
              <span className="jp-Air-value-power" title={trans.__('Power draw')}>
                {formatValue(latestValue(history.gpus.power_watts[i]), ' W', 1)}
              </span>
            </div>
            {device.error ? <div className="jp-Air-device-error">{device.error}</div> : null}
          </li>
        );
      })}
    </ul>
  );
}
