/** One bar: its label under it and its value (the bar's height, and its title on hover). */
export interface Bar {
  label: string;
  value: number;
}

const WIDTH = 640;
const HEIGHT = 200;
const AXIS = 24;

/** A plain SVG bar chart: bars scaled to the largest value, every label shown when they fit (every nth otherwise). */
export function BarChart({ bars, label, format }: { bars: readonly Bar[]; label: string; format(value: number): string }) {
  const max = Math.max(...bars.map((bar) => bar.value), 0);
  const slot = WIDTH / Math.max(1, bars.length);
  const labelEvery = Math.max(1, Math.ceil(bars.length / 12));
  return (
    <svg className="bar-chart" viewBox={`0 0 ${WIDTH} ${HEIGHT + AXIS}`} role="img" aria-label={label}>
      <line x1={0} x2={WIDTH} y1={HEIGHT} y2={HEIGHT} className="bar-chart-axis" />
      {bars.map((bar, index) => {
        const height = max > 0 ? (bar.value / max) * (HEIGHT - 4) : 0;
        const x = index * slot;
        return (
          <g key={bar.label} data-bar={bar.label}>
            <rect x={x + slot * 0.1} y={HEIGHT - height} width={slot * 0.8} height={Math.max(height, 0)}>
              <title>{`${bar.label}: ${format(bar.value)}`}</title>
            </rect>
            {index % labelEvery === 0 && (
              <text x={x + slot / 2} y={HEIGHT + 16} textAnchor="middle">
                {bar.label}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}
