import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** One point of "connected over time": its time (ms since the epoch), connected devices and all devices. */
export interface ConnectedPoint {
  at: number;
  connected: number;
  total: number;
}

const HEIGHT = 240;

/**
 * "Connected over time" drawn by uPlot on a canvas. Loaded with the overview only (a chunk of its own: the first
 * page does not carry uPlot). The canvas is hidden from assistive technology: the page gives the same numbers as
 * text and as a table. uPlot sizes its elements through the CSSOM (allowed by the console's CSP, which forbids
 * `style` attributes and elements).
 */
export function ConnectedChart({ points, from, to }: { points: ConnectedPoint[]; from: number; to: number }) {
  const holder = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const data: uPlot.AlignedData = [
      points.map((p) => p.at / 1000),
      points.map((p) => p.connected),
      points.map((p) => p.total),
    ];
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: HEIGHT,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        // The whole range asked, however few samples it has yet.
        scales: {
          x: { time: true, range: () => [from / 1000, to / 1000] },
          y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.05] },
        },
        axes: [{ stroke: '#4d5662' }, { stroke: '#4d5662', size: 70 }],
        series: [
          {},
          { label: 'Connected', stroke: '#1e6b34', fill: 'rgba(30, 107, 52, 0.12)', width: 2 },
          { label: 'All devices', stroke: '#0b5cad', dash: [6, 4], width: 1.5 },
        ],
      },
      data,
      element,
    );
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(320, element.clientWidth), height: HEIGHT }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [points, from, to]);
  return <div class="chart" ref={holder} aria-hidden="true" />;
}
