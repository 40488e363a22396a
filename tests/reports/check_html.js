// The HTML report in a real browser (Debian's Chromium, driven by playwright-core).
// Usage: node check_html.js GOLDEN.html LARGE.html SCREENSHOT.png TIMELINE.html TIMELINE.json TIMELINE.png
//        POOLS.html POOLS.png TORCH.html TORCH.png
const { chromium } = require("playwright-core");

const [goldenPage, largePage, screenshot, timelinePage, timelineJson, timelineShot, poolsPage, poolsShot, torchPage, torchShot] = process.argv.slice(2);
const timelineReport = JSON.parse(require("fs").readFileSync(timelineJson, "utf8"));
let failures = 0, passes = 0;
const check = (ok, what) => { console.log(`${ok ? "PASS" : "FAIL"} ${what}`); ok ? passes++ : failures++; };
// Every axis label of every chart on the page: inside its chart and over no other (issue 35: "512.0
// MiB" clipped to "12.0 MiB", "1030.8 MiB" printed over "1.0 GiB", "5.0 s" over "5.24 s").
const axisLabels = page => page.evaluate(() => {
  const bad = [];
  let count = 0;
  for (const svg of document.querySelectorAll("svg")) {
    const width = svg.viewBox.baseVal.width, height = svg.viewBox.baseVal.height;
    const boxes = [...svg.querySelectorAll("text")].map(t => ({ t: t.textContent, tick: t.classList.contains("tick"), b: t.getBBox() }));
    for (const [i, x] of boxes.entries()) {
      if (!x.tick) continue;
      count++;
      if (x.b.x < 0 || x.b.y < 0 || x.b.x + x.b.width > width || x.b.y + x.b.height > height) bad.push(`"${x.t}" leaves its chart`);
      for (const y of boxes.slice(i + 1)) {
        if (y.tick && x.b.x < y.b.x + y.b.width && y.b.x < x.b.x + x.b.width && x.b.y < y.b.y + y.b.height && y.b.y < x.b.y + x.b.height)
          bad.push(`"${x.t}" overlaps "${y.t}"`);
      }
    }
  }
  return { count, bad };
});
const labelsFit = async (page, what) => {
  const { count, bad } = await axisLabels(page);
  check(count > 0 && bad.length === 0, `${what}: its ${count} axis labels are inside their charts and apart (${bad.slice(0, 4).join("; ")})`);
};

(async () => {
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", e => errors.push(String(e)));

  // A run recorded on the H200.
  await page.goto("file://" + goldenPage);
  const rows = await page.locator("tr.finding").count();
  check(rows === 2, `the recorded run's 2 findings are listed (${rows})`);
  check((await page.locator("#cards").innerText()).includes("344,064"), "the summary shows the leaked bytes");
  await page.selectOption("#filter-kind", "leak");
  check(await page.locator("tr.finding").count() === 2, "filtering by kind keeps the leaks");
  await page.fill("#filter-text", "upload");
  check(await page.locator("tr.finding").count() === 1, "filtering by text keeps the one from upload()");
  await page.fill("#filter-text", "");
  await page.locator("tr.finding").first().click();
  const details = await page.locator("tr.details").innerText();
  check(details.includes("process_batch") && details.includes("CUDA_CHECK(cudaMalloc(&scratch"),
        "a finding expands to its stack with the source lines around it");
  await page.locator("th[data-key=bytes]").click();
  const firstBytes = await page.locator("tr.finding td.num").first().innerText();
  check(firstBytes === "327,680", `sorting by bytes puts the biggest first (${firstBytes})`);
  await page.locator("tr.finding").first().click();
  await page.screenshot({ path: screenshot, fullPage: true });
  await page.fill("#filter-text", "no-such-function-anywhere");
  check((await page.locator("#findings tr.empty").innerText()) === "No finding matches these filters.",
        "a table the filters empty says so instead of showing bare headers");
  await page.fill("#filter-text", "");
  await page.emulateMedia({ colorScheme: "dark" });
  const darkBg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  check(darkBg === "rgb(13, 17, 23)", `the page follows the system's dark mode (${darkBg})`);
  await page.emulateMedia({ colorScheme: "light" });

  // 10,000 findings, some with hostile names.
  const start = Date.now();
  await page.goto("file://" + largePage);
  await page.waitForSelector("tr.finding");
  const loaded = Date.now() - start;
  const shownText = await page.locator("#shown").innerText();
  check(shownText.startsWith("10001 of 10003") && shownText.includes("2 note(s) hidden"),
        `10,000 findings and the fixture's out-of-memory one are listed, its 2 churn notes hidden by default (${shownText})`);
  const made = await page.locator("tr.finding").count();
  check(made === 200, `only the first page of rows is made (${made})`);
  await page.locator("tr.more").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelectorAll("tr.finding").length === 400);
  check(true, "scrolling to the end of the table makes the next page of rows");
  await page.check("#show-info");
  check((await page.locator("#shown").innerText()).startsWith("10003 of 10003"), "the notes are shown on request");
  await page.uncheck("#show-info");
  const title = await page.title();
  check(title === "cuaudit: app </script><script>window.__pwned = 1</script>", `the page title names the program (${title})`);
  // PyTorch-length signatures wrap: the page never scrolls sideways, not even with a stack open.
  await page.fill("#filter-text", "cpu_kernel_vec");
  const long = page.locator("td.where[title^='void at::native']");
  check(await long.innerText() === "at::native::(anonymous namespace)::cpu_kernel_vec app.cu:11",
        `a long signature is shortened in the table (${await long.innerText()}), in full on hover`);
  const wide = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(await wide() <= 0, `the page is no wider than the window (${await wide()} px over)`);
  await long.click();
  check(await wide() <= 0, `nor with the long signature's stack open (${await wide()} px over)`);
  await long.click();
  await page.fill("#filter-text", "");
  // Timings are printed, never asserted: CI machines are small and shared (a benchmark's business).
  console.log(`note: the page with 10,000 findings loaded in ${loaded} ms`);
  const t0 = Date.now();
  await page.selectOption("#filter-kind", "double_free");
  const filtered = await page.locator("#shown").innerText();
  check(filtered.startsWith("3333 of"), `filtering 10,000 findings by kind leaves ${filtered} (took ${Date.now() - t0} ms)`);
  await page.selectOption("#filter-kind", "");
  const pwned = await page.evaluate(() => window.__pwned);
  check(pwned === undefined, "names and messages from the program are text, never markup or script");
  await page.fill("#filter-text", "fill<int4>");
  check(await page.locator("td.where[title^='fill<int4>(int4*, int)</td><script>']").count() === 1,
        "a kernel name with angle brackets is kept as written (in the cell's title)");
  await page.fill("#filter-text", "");
  const svgs = await page.locator("#timeline svg").count();
  check(svgs === 1, `the timeline of 100,000 samples is drawn (${svgs} chart)`);
  const points = await page.locator("polyline.series-used").getAttribute("points");
  const pointCount = points.trim().split(/\s+/).length;
  check(pointCount <= 3 * 1000, `the chart is downsampled to the pixels it has (${pointCount} points)`);
  const timelineText = await page.locator("#timeline").innerText();
  check(timelineText.includes("peak 3.5 GiB at 6.000 s") && timelineText.includes("phase_two phases.cu:42"),
        "the peak is marked, with the site that held the most then");
  check(await page.locator("circle.peak").count() === 1, "the peak has its marker");
  check(await page.locator("line.oom").count() === 1 && timelineText.includes("out of memory (cudaMalloc)"),
        "the out-of-memory moment is marked on the timeline");
  const churnRows = await page.locator("#churn tbody tr").allInnerTexts();
  check(churnRows.length === 2 && churnRows[0].includes("hot_loop") && churnRows[0].includes("61.0%"),
        `the churn table lists both sites, the most time first (${JSON.stringify(churnRows)})`);
  await page.click("#churn th[data-key=pairs]");  // most pairs first...
  await page.click("#churn th[data-key=pairs]");  // ...then fewest first
  const byPairs = await page.locator("#churn tbody tr").allInnerTexts();
  check(byPairs[0].startsWith("async_step"), "the churn table sorts by a column when its header is clicked");
  // The time axis has ticks with units; hovering shows a sample; dragging zooms in; "whole run" goes back.
  const tickTexts = await page.locator("#timeline svg text.tick").allTextContents();
  check(tickTexts.includes("2.0 s") && tickTexts.includes("6.0 s") && tickTexts.some(t => t.endsWith("GiB")),
        `the axes have ticks with units (${tickTexts.join(", ")})`);
  await page.locator("#timeline svg").scrollIntoViewIfNeeded();  // the churn table's clicks scrolled past it
  const box = await page.locator("#timeline svg").boundingBox();
  const pad = Number(await page.locator("#timeline svg line.axis").getAttribute("x1"));  // room the memory labels took
  const xAt = t => box.x + (pad + (1000 - pad - 10) * t / 8) * box.width / 1000;
  await page.mouse.move(xAt(6), box.y + 100);
  const tip = await page.locator("#timeline .tooltip").innerText();
  const tipAt = parseFloat(tip);
  check(Math.abs(tipAt - 6) < 0.02 && /s: 3\.\d GiB in use, 3\.0 GiB held by the program$/.test(tip), `hovering at 6 s shows that sample (${tip})`);
  await page.mouse.move(xAt(5), box.y + 100);
  await page.mouse.down();
  await page.mouse.move(xAt(7), box.y + 100);
  await page.mouse.up();
  const zoomed = await page.locator("#timeline svg text.tick").allTextContents();
  check(!zoomed.includes("2.0 s") && zoomed.some(t => t.startsWith("5.")) && await page.locator("#timeline button.reset").count() === 1,
        `dragging from 5 s to 7 s zooms in (${zoomed.filter(t => t.endsWith("s")).join(", ")})`);
  await page.click("#timeline button.reset");
  check((await page.locator("#timeline svg text.tick").allTextContents()).includes("2.0 s"), "\"whole run\" zooms back out");
  // The stacked chart: two sites and the others, each a band; the climbing one is named in the legend.
  const bands = await page.locator("#site-series polygon.site-band").count();
  const legendText = await page.locator("#site-series .legend").innerText();
  check(bands === 3 && legendText.includes("cudaMalloc at phase_two phases.cu:42") && legendText.includes("all other sites"),
        `the live memory by site is a stacked chart of 2 sites and the others (${bands} bands: ${legendText})`);
  check(legendText.includes("cudaMallocAsync at RMM pool"), "a site the tool named is shown by that name (its allocator), not by its innermost frame");
  await labelsFit(page, "the 10,000-finding page");
  await page.selectOption("#filter-kind", "out_of_memory");
  await page.locator("tr.finding").first().click();
  check(await page.locator("a.oom-link").getAttribute("href") === "#timeline-7-0", "the out-of-memory finding links to its timeline");
  await page.selectOption("#filter-kind", "");

  // The three-phase program recorded on the H200: each phase's height must be in the drawn line.
  await page.goto("file://" + timelinePage);
  await page.waitForSelector("#timeline svg");
  const drawn = await page.evaluate(() => {
    const svg = document.querySelector("#timeline svg");
    const pts = svg.querySelector("polyline.series-used").getAttribute("points").trim().split(/\s+/)
      .map(p => p.split(",").map(Number));
    return { pts, label: svg.querySelector("text").textContent, tmax: svg.querySelectorAll("text")[1].textContent };
  });
  // Axis as the page draws it: W=1000, H=220, PAD=46; the top of the chart is 15% above the largest
  // value (headroom: the data never touches the edge, the peak's label sits above it).
  const samples = timelineReport.timeline.samples.filter(s => s.device === 0);
  const highest = Math.max(...samples.map(s => Math.max(s.used, s.tracked)));
  const ymax = highest * 1.15;
  const topOfData = Math.min(...drawn.pts.map(([, y]) => y));
  check(topOfData > 10 + (220 - 34) * 0.1, `the highest point has headroom above it (y ${topOfData.toFixed(1)})`);
  const tmax = Math.max(...samples.map(s => s.t));
  const valueAt = y => (220 - 24 - y) / (220 - 34) * ymax;
  const xOf = t => 46 + (1000 - 46 - 10) * t / tmax;
  const GiB = 1 << 30;
  for (const [name, size] of [["one", 1 * GiB], ["two", 3 * GiB], ["three", 2 * GiB]]) {
    // The longest run of samples holding the phase's size (another phase passes through it briefly).
    let best = [], run = [];
    for (const s of samples.concat([{ tracked: -1 }])) {
      if (s.tracked === size) { run.push(s); continue; }
      if (run.length > best.length) best = run;
      run = [];
    }
    const inside = best;
    const lo = xOf(inside[0].t) - 1, hi = xOf(inside[inside.length - 1].t) + 1;
    const top = Math.max(...drawn.pts.filter(([x]) => x >= lo && x <= hi).map(([, y]) => valueAt(y)));
    const want = Math.max(...inside.map(s => s.used));
    check(Math.abs(top - want) < ymax / 100, `phase ${name} is drawn at its height (${(top / GiB).toFixed(2)} GiB, samples say ${(want / GiB).toFixed(2)} GiB)`);
  }
  // The peak's label covers no line, and speaks the unit of the axis beside it.
  const covered = await page.evaluate(() => [...document.querySelectorAll("svg")].flatMap(svg => {
    const label = svg.querySelector("text.peak-label");
    if (!label) return [];
    const b = label.getBBox();
    return [...svg.querySelectorAll("polyline")].flatMap(line => line.getAttribute("points").trim().split(/\s+/)
      .map(p => p.split(",").map(Number)).filter(([x, y]) => x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height)
      .map(([x, y]) => `${label.textContent} over ${line.getAttribute("class")} at ${x},${y}`));
  }));
  const peakLabel = await page.locator("text.peak-label").first().textContent();
  check(covered.length === 0 && / GiB at /.test(peakLabel), `the peak's label (${peakLabel}) covers no line (${covered.slice(0, 3).join("; ")})`);
  const peak = timelineReport.timeline.peaks[0];
  const phasesText = await page.locator("#timeline").innerText();
  check(phasesText.includes(`at ${peak.t.toFixed(3)} s`) && phasesText.includes("phase_two"),
        `the peak is marked at ${peak.t.toFixed(3)} s with phase two's allocation site`);
  await page.locator("#timeline").screenshot({ path: timelineShot });
  await labelsFit(page, "the three-phase run");

  // A pool cut into holes: its chart (reserved, used, the ratio) and its segments at the worst moment.
  await page.goto("file://" + poolsPage);
  await page.waitForSelector("#pools svg");
  check(!(await page.locator("#pools-section").isHidden()), "the pools section is shown when a pool has a series");
  check(await page.locator(`#${await page.locator("#pools .chart").first().getAttribute("id")} polyline.pool-reserved`).count() === 1 &&
        await page.locator("#pools polyline.pool-used").count() === 3 && await page.locator("#pools polyline.pool-ratio").count() === 1,
        "the pool's chart has reserved, used and the fragmentation ratio");
  const poolText = await page.locator("#pools").innerText();
  check(poolText.includes("worst: 88% fragmented at 2.000 s"), "the worst moment is marked on the pool's chart");
  check(await page.locator("#pools svg.segment").count() === 2, "each segment of the picture is a bar");
  check(await page.locator("#pools polyline.pool-reserved").count() === 3 && await page.locator("#pools polyline.pool-ratio").count() === 1 &&
        poolText.includes("CUDA's stream-ordered pool (device 0)") && poolText.includes("its fragmentation is not measured"),
        "a stream-ordered pool is charted from the samples, reserved and used without a ratio");
  check(!(await page.locator("#migrations-section").isHidden()) && await page.locator("#migrations rect.migration-to-device").count() === 4 &&
        await page.locator("#migrations rect.migration-to-host").count() === 4 &&
        (await page.locator("#migrations").innerText()).includes("device 0: 16.0 MiB to the device, 16.0 MiB to the host"),
        "managed memory migrations are charted per device: a bar a bucket each way, the totals in the title");
  const heapChart = page.locator("#pools .chart", { hasText: "device heap of device 0 (malloc in kernels)" });
  check(await heapChart.locator("polyline.pool-used").count() === 1 && await heapChart.locator("polyline.pool-ratio").count() === 0 &&
        (await heapChart.innerText()).includes("its fragmentation is not measured"),
        "a device heap is charted, used against its size, without a fragmentation ratio");
  const blocks = await page.locator("#pools svg.segment").first().locator("rect.segment-block").count();
  check(blocks === 8, `the first segment's eight blocks are drawn between its holes (${blocks})`);
  const firstBlock = await page.evaluate(() => {
    const bar = document.querySelector("#pools svg.segment"), r = bar.querySelector("rect.segment-block");
    return { x: Number(r.getAttribute("x")), w: Number(r.getAttribute("width")), bw: Number(bar.getAttribute("width")), title: r.textContent };
  });
  check(Math.abs(firstBlock.x - firstBlock.bw / 16) < 0.5 && Math.abs(firstBlock.w - firstBlock.bw / 16) < 0.5,
        `a block is drawn at its offset and size in its segment (x ${firstBlock.x.toFixed(1)}, width ${firstBlock.w.toFixed(1)} of ${firstBlock.bw})`);
  check(firstBlock.title.includes("keep_forever pool_demo.cu:30"), `a block names its site on hover (${firstBlock.title})`);
  check(poolText.includes("keep_forever pool_demo.cu:30: 5.0 MiB in 12 block(s)") && poolText.includes("scratch pool_demo.cu:41"),
        "the legend names each site with its bytes");
  const poolOom = await page.locator("#pools line.pool-oom").first().locator("title").textContent();
  check(poolText.includes("out of memory (cudaMalloc) at 3.500 s") && poolOom.includes("inside pool 'arena'"),
        `the process's out-of-memory moment is marked on its pool's chart, with its verdict (${poolOom})`);
  await page.selectOption("#filter-kind", "fragmentation");
  await page.locator("tr.finding").first().click();
  check(await page.locator("a.pool-link").getAttribute("href") === "#pool-9-pool-arena-NVTX-heap-",
        "the fragmentation finding links to its pool's chart");
  await page.locator("#pools svg").first().scrollIntoViewIfNeeded();  // the mouse reaches only what is in view
  const pbox = await page.locator("#pools svg").first().boundingBox();
  await page.mouse.move(pbox.x + pbox.width * 0.6, pbox.y + 100);
  const poolTip = await page.locator("#pools .tooltip").first().innerText();
  check(/s: 8\.0 MiB reserved, 6\.0 MiB used, 2\.0 MiB free in holes, the largest 256\.0 KiB \(88% fragmented\)$/.test(poolTip),
        `hovering the pool's chart shows that sample (${poolTip})`);
  await page.locator("#pools").screenshot({ path: poolsShot });
  await labelsFit(page, "the pools page");

  // PyTorch's growth recorded on the H200 (cache on): the review's worst page for labels and legends.
  await page.goto("file://" + torchPage);
  await page.waitForSelector("#timeline svg");
  await labelsFit(page, "the PyTorch growth run");
  const torchLegend = await page.locator("#site-series .legend").innerText();
  const torchPeak = await page.locator("#timeline ul.notes").innerText();
  // The tensors by the user's Python line (PyTorch's blocks, not its segments); what the cache holds
  // and has not handed out as one series of its own; cuBLAS's workspace by the library and the line.
  check(torchLegend.includes("at torch_growth.py:19") && torchLegend.includes("at torch_growth.py:11") &&
        torchLegend.includes("PyTorch's CUDA caching allocator, reserved and not handed out") &&
        torchLegend.includes("cublasCreate_v2 (libcublas.so.13) from torch_growth.py:19") &&
        !torchLegend.includes("alloc_block") && !/\?/.test(torchLegend),
        `the PyTorch run's tensors are named by their Python lines, the cache by its allocator (${torchLegend})`);
  check(/^480\.0 MiB in 60 allocation\(s\) \(CUDACachingAllocator::malloc\) at torch_growth\.py:19/.test(torchPeak) &&
        !torchPeak.includes("alloc_block"),
        `the sites held at the peak are named the same way (${torchPeak.split("\n").join("; ")})`);
  const torchCovered = await page.evaluate(() => {
    const svg = document.querySelector("#timeline svg"), b = svg.querySelector("text.peak-label").getBBox();
    return [...svg.querySelectorAll("polyline")].some(line => line.getAttribute("points").trim().split(/\s+/)
      .map(p => p.split(",").map(Number)).some(([x, y]) => x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height));
  });
  check(!torchCovered, "the PyTorch run's peak label covers no line");
  // One time scale: the last tick of the timeline and of the site chart name the same moment at the same x.
  const lastTicks = await page.evaluate(() => ["#timeline svg", "#site-series svg"].map(sel => {
    const ticks = [...document.querySelector(sel).querySelectorAll("text.tick")].filter(t => t.getAttribute("text-anchor") === "middle");
    const last = ticks[ticks.length - 1];
    return last ? `${last.textContent}@${Math.round(Number(last.getAttribute("x")))}` : "";
  }));
  check(lastTicks[0] !== "" && lastTicks[0] === lastTicks[1], `the timeline and the site chart share one time scale (${lastTicks.join(" vs ")})`);
  // What gates leads the page: the run's one error is above the notes, the processes and the charts;
  // a file:line in the "where" column is never split across lines.
  const errorTop = (await page.locator("tr.finding", { hasText: "error" }).first().boundingBox()).y;
  const processesTop = (await page.locator("#processes").boundingBox()).y;
  const chartsTop = (await page.locator("#timeline").boundingBox()).y;
  check(errorTop < processesTop && errorTop < chartsTop && errorTop < 900,
        `the error is the first thing under the summary (y ${errorTop}; processes at ${processesTop}, charts at ${chartsTop})`);
  await page.setViewportSize({ width: 900, height: 900 });  // narrow: the where column wraps
  const splitLocations = await page.evaluate(() => [...document.querySelectorAll("td.where .loc")]
      .filter(loc => loc.getClientRects().length > 1).map(loc => loc.textContent));
  const locations = await page.locator("td.where .loc").count();
  check(locations > 0 && splitLocations.length === 0,
        `no file:line broken across lines (${locations} shown; split: ${splitLocations.join(", ")})`);
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.screenshot({ path: torchShot, fullPage: true });

  check(errors.length === 0, `no console errors (${errors.join("; ")})`);
  await browser.close();
  console.log(`${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})().catch(e => { console.log("FAIL " + e); process.exit(1); });
