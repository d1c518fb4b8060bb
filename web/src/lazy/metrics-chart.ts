import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface MetricSeries {
  key: string;
  /** Seconds since the epoch, ascending. */
  times: number[];
  values: number[];
}

/** One time-series chart of a metric (uPlot, drawn on a canvas); answers the way to remove it. */
export function drawMetric(element: HTMLElement, series: MetricSeries, width: number): () => void {
  const plot = new uPlot(
    {
      width,
      height: 160,
      legend: { show: false },
      scales: { x: { time: true } },
      axes: [{ stroke: '#4d5662' }, { stroke: '#4d5662', size: 56 }],
      series: [
        {},
        { label: series.key, stroke: '#0b5cad', width: 2, points: { show: series.times.length < 60 } },
      ],
    },
    [series.times, series.values],
    element,
  );
  return () => plot.destroy();
}
