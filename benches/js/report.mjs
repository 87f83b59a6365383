// Output formats: markdown tables, the hand-written SVG ratio chart, summary.md.

const NUMERIC = /^[-\d.,×%]+$/
const PLACEHOLDER = /^(—|n\/a|not implemented yet)$/

/** `table = { caption, columns, rows }`; cells are strings; columns of numbers (and placeholders) are right-aligned. */
export function markdownTable({ caption, columns, rows }) {
  const numeric = columns.map((_, i) => rows.every((row) => NUMERIC.test(row[i]) || PLACEHOLDER.test(row[i])))
  const widths = columns.map((c, i) => Math.max(c.length, 3, ...rows.map((row) => row[i].length)))
  const line = (cells) =>
    `| ${cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ')} |`
  const rule = `|${widths.map((w, i) => (numeric[i] ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`
  return [caption ? `**${caption}**\n` : '', line(columns), rule, ...rows.map(line)].filter(Boolean).join('\n')
}

/** A benchmark's section: title, notes, tables. */
export function markdownSection(result) {
  const parts = [`## ${result.title}`]
  if (result.notes.length) parts.push(result.notes.map((n) => `- ${n}`).join('\n'))
  if (result.error) parts.push(`**Failed:**\n\n\`\`\`\n${result.error}\n\`\`\``)
  for (const table of result.tables) parts.push(markdownTable(table))
  return parts.join('\n\n')
}

const escapeXml = (s) => s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c])

/**
 * Horizontal bars of fairfs-vs-node ratios on a log2 axis centred on 1×,
 * grouped by benchmark. Every ratio is oriented so that > 1 means fairfs is better.
 */
export function ratioSvg(results, subtitle) {
  const groups = results.filter((r) => r.ratios.length)
  const values = groups.flatMap((g) => g.ratios.map((r) => r.value)).filter((v) => Number.isFinite(v) && v > 0)
  // Axis spans the data, at least 0.5×..2×, at most 1/64×..64×; bars beyond are clipped.
  const span = Math.min(6, Math.max(1, Math.ceil(Math.max(0, ...values.map((v) => Math.abs(Math.log2(v)))))))
  const rowH = 18
  // Roughly 6.6 px per character of 12 px sans-serif.
  const labelW = Math.max(200, 20 + 6.6 * Math.max(...groups.flatMap((g) => g.ratios.map((r) => r.label.length))))
  const plotW = 520
  const width = labelW + plotW + 70
  const top = 64
  const rows = groups.reduce((n, g) => n + g.ratios.length + 1, 0)
  const height = top + rows * rowH + 30
  const x = (v) => Math.round(labelW + ((Math.max(-span, Math.min(span, Math.log2(v))) + span) / (2 * span)) * plotW)
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold">fairfs vs node:fs (ratio, log scale; &gt; 1× = fairfs better)</text>`,
    `<text x="10" y="40" fill="#555">${escapeXml(subtitle)}</text>`,
  ]
  for (let e = -span; e <= span; e++) {
    const gx = x(2 ** e)
    out.push(`<line x1="${gx}" y1="${top - 8}" x2="${gx}" y2="${height - 24}" stroke="${e === 0 ? '#333' : '#ddd'}"/>`)
    out.push(`<text x="${gx}" y="${height - 10}" text-anchor="middle" fill="#555">${e < 0 ? `1/${2 ** -e}` : 2 ** e}×</text>`)
  }
  let y = top
  for (const g of groups) {
    out.push(`<text x="10" y="${y + 13}" font-weight="bold">${escapeXml(g.title)}</text>`)
    y += rowH
    for (const { label, value } of g.ratios) {
      out.push(`<text x="${labelW - 8}" y="${y + 13}" text-anchor="end">${escapeXml(label)}</text>`)
      if (Number.isFinite(value) && value > 0) {
        const x0 = x(1)
        const x1 = x(value)
        const color = value >= 1 ? '#2e8b57' : '#c0392b'
        out.push(`<rect x="${Math.min(x0, x1)}" y="${y + 3}" width="${Math.max(1, Math.abs(x1 - x0))}" height="${rowH - 6}" fill="${color}"/>`)
        out.push(`<text x="${labelW + plotW + 8}" y="${y + 13}">${value.toFixed(2)}×</text>`)
      }
      y += rowH
    }
  }
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/** summary.md: machine header, the command, then every benchmark's section. */
/** The pool settings a run used, from `fairfs.stats()` (the fallback backend has none). */
function describePool(s) {
  if (s.backend !== 'native') return `${s.backend} backend (node:fs)`
  const limit = s.largeLimitAdaptive
    ? `big-read limit adaptive up to ${s.largeLimitMax} (src/policy/contention.rs; ${s.libuvThreads} libuv threads watched)`
    : `big-read limit fixed at ${s.largeLimit}`
  return `${s.threads} threads, ${s.chunkSize / 1024} KiB chunks, ${limit}, nice ${s.nice}`
}

export function summaryMarkdown(meta, results) {
  const m = meta.machine
  const header = [
    '# fairfs benchmark results',
    '',
    `- Machine: ${m.cpu}, ${m.cores} logical cores, ${m.memoryGiB} GiB RAM`,
    `- OS: ${m.os}, kernel ${m.kernel}; load average at start: ${m.loadAverage}`,
    `- Node: ${m.node} (${m.nodePath})`,
    `- fairfs pool: ${describePool(meta.fairfsPool)}; UV_THREADPOOL_SIZE=${m.uvThreadpoolSize ?? 'unset (4)'}`,
    `- Command: \`${meta.command}\` (${meta.quick ? 'quick smoke run' : 'full run'}), started ${meta.startedAt}, took ${meta.durationSeconds.toFixed(0)} s`,
    '- Method: each comparison runs in one process; after an untimed warm-up round the sides run interleaved, in rotated order, over several rounds; figures are medians over rounds.',
    '- Ratios are oriented so that > 1 means fairfs is better: rates are fairfs ÷ node, times are node ÷ fairfs.',
  ].join('\n')
  return [header, ...results.map(markdownSection)].join('\n\n') + '\n'
}
