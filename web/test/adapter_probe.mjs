// Which WebGPU adapter headless Chromium gets with the flags in WGC_CHROMIUM_FLAGS (harness.mjs),
// from a page on a local static server (a secure context): prints one line, "vendor / architecture
// / device / description [features]", or "none". Used by scripts/web_device.sh to find the flags
// that reach a GPU machine's GPU.
//   WGC_CHROMIUM_FLAGS='--enable-features=Vulkan ...' node web/test/adapter_probe.mjs --site build/web --deps .deps
import { launch, loadPuppeteer, openPage, options, staticServer } from './harness.mjs';

const opt = options();
if (!opt.site || !opt.deps) throw new Error('usage: adapter_probe.mjs --site DIR --deps DIR');
const server = await staticServer(opt.site);
const browser = await launch(await loadPuppeteer(opt.deps), { webgpu: true });
try {
  const page = await openPage(browser, `${server.url}/local/wgc.js`);
  console.log(await page.evaluate(async () => {
    if (!navigator.gpu) return 'none (no navigator.gpu)';
    const a = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!a) return 'none (requestAdapter gave null)';
    const i = a.info;
    return `${[i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' / ')} ` +
           `[${[...a.features].sort().join(' ')}] maxStorageBufferBindingSize ${a.limits.maxStorageBufferBindingSize}`;
  }));
} finally {
  await browser.close();
  server.close();
}
