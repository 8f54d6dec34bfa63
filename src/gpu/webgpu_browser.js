// WebGPU in the browser, the JavaScript half of webgpu_browser.cpp (an emscripten --js-library of
// the wasm build): what emscripten 3.1.6's 2022 bindings (library_webgpu.js) lack or get wrong for
// today's browsers, working on the same object tables (WebGPU.mgr*):
//  - the waits: wgc_browser_wait sleeps (Asyncify.handleSleep: an ASYNCIFY yield) until
//    wgc_browser_notify names its future, or its time-out passes;
//  - the adapter (its info, features and limits, as JSON) and the device (every adapter limit
//    asked for, and the features named; the 2022 request names limits browsers have since dropped);
//  - shader compilation messages and asynchronous pipelines (both unimplemented there);
//  - two API changes since 2022: dispatch() is dispatchWorkgroups(), and a pipeline's layout must
//    be given ('auto' when none).
mergeInto(LibraryManager.library, {
  $WGCB__deps: ['$WebGPU'],
  $WGCB__postset: 'WGCB.init();',
  $WGCB: {
    waiters: null, // future -> wake-up function of the sleeping wait
    waits: 0, // waits that slept, and their time (Module.wgcWaitStats())
    waitMs: 0,
    init: function() {
      WGCB.waiters = new Map();
      Module['wgcWaitStats'] = function() { return { waits: WGCB.waits, ms: WGCB.waitMs }; };
      if (typeof GPUComputePassEncoder !== 'undefined' && !GPUComputePassEncoder.prototype.dispatch)
        GPUComputePassEncoder.prototype.dispatch = GPUComputePassEncoder.prototype.dispatchWorkgroups;
      if (typeof GPUDevice !== 'undefined' && !GPUDevice.prototype.wgcLayoutAuto) {
        var create = GPUDevice.prototype.createComputePipeline;
        GPUDevice.prototype.createComputePipeline = function(d) {
          return create.call(this, Object.assign({}, d, { layout: d.layout || 'auto' }));
        };
        GPUDevice.prototype.wgcLayoutAuto = true;
      }
    },
    str: function(s) { // a malloc'd UTF-8 copy (the C side frees it)
      var n = lengthBytesUTF8(s) + 1;
      var p = _malloc(n);
      stringToUTF8(s, p, n);
      return p;
    },
    limits: function(l) {
      var out = {};
      for (var k in l) if (typeof l[k] === 'number') out[k] = l[k];
      return out;
    },
  },

  wgc_browser_wait__deps: ['$WGCB'],
  wgc_browser_wait: function(future, timeoutMs) {
    return Asyncify.handleSleep(function(wakeUp) {
      var timer = 0;
      var t0 = performance.now();
      WGCB.waits++;
      WGCB.waiters.set(future, function() {
        if (timer) clearTimeout(timer);
        WGCB.waitMs += performance.now() - t0;
        wakeUp(1);
      });
      // A zero time-out is a poll: one turn of the event loop.
      timer = setTimeout(function() {
        if (WGCB.waiters.delete(future)) wakeUp(0);
      }, Math.min(timeoutMs, 2147483647));
    });
  },

  // Called from wasm (a completion callback): the sleeper resumes after the current task, never
  // inside it (a rewind must not start while wasm is running). No sleeper: the C side sees the
  // future completed before it would wait.
  wgc_browser_notify__deps: ['$WGCB'],
  wgc_browser_notify: function(future) {
    var wake = WGCB.waiters.get(future);
    if (!wake) return;
    WGCB.waiters.delete(future);
    Promise.resolve().then(wake);
  },

  wgc_browser_defer_scopes: function() { return Module['wgcDeferErrorScopes'] ? 1 : 0; },

  wgc_browser_request_adapter__deps: ['$WGCB'],
  wgc_browser_request_adapter: function(op, powerPreference) {
    var done = function(id, message) { _wgc_browser_adapter_done(op, id, message ? WGCB.str(message) : 0); };
    if (typeof navigator === 'undefined' || !navigator.gpu) {
      setTimeout(function() {
        done(0, 'WebGPU is not available here: navigator.gpu is missing (it needs Chrome or Edge 113+, ' +
                'Safari 26+ or Firefox 141+, in a secure context: https:// or localhost)');
      }, 0);
      return;
    }
    navigator.gpu.requestAdapter({ powerPreference: powerPreference === 1 ? 'low-power' : 'high-performance' })
      .then(function(adapter) {
        if (adapter) done(WebGPU.mgrAdapter.create(adapter), null);
        else done(0, 'the browser offers no WebGPU adapter (requestAdapter returned null: WebGPU may be ' +
                     'disabled, or this GPU is blocked)');
      }, function(e) { done(0, 'requestAdapter failed: ' + e.message); });
  },

  wgc_browser_adapter_json__deps: ['$WGCB'],
  wgc_browser_adapter_json: function(adapterId) {
    var a = WebGPU.mgrAdapter.get(adapterId);
    var info = a.info || {};
    return WGCB.str(JSON.stringify({
      vendor: info.vendor || '', architecture: info.architecture || '', device: info.device || '',
      description: info.description || '', subgroupMinSize: info.subgroupMinSize || 0,
      subgroupMaxSize: info.subgroupMaxSize || 0,
      isFallbackAdapter: !!(info.isFallbackAdapter || a.isFallbackAdapter),
      features: Array.from(a.features), limits: WGCB.limits(a.limits),
    }));
  },

  wgc_browser_device_json__deps: ['$WGCB'],
  wgc_browser_device_json: function(deviceId) {
    var d = WebGPU.mgrDevice.get(deviceId);
    return WGCB.str(JSON.stringify({ features: Array.from(d.features), limits: WGCB.limits(d.limits) }));
  },

  wgc_browser_request_device__deps: ['$WGCB'],
  wgc_browser_request_device: function(op, adapterId, featuresPtr) {
    var a = WebGPU.mgrAdapter.get(adapterId);
    var features = UTF8ToString(featuresPtr).split(',').filter(function(f) { return f; });
    a.requestDevice({ label: 'wgc', requiredFeatures: features, requiredLimits: WGCB.limits(a.limits) })
      .then(function(device) {
        var id = WebGPU.mgrDevice.create(device, { queueId: WebGPU.mgrQueue.create(device.queue) });
        _wgc_browser_device_done(op, id, 0);
      }, function(e) { _wgc_browser_device_done(op, 0, WGCB.str('requestDevice failed: ' + e.message)); });
  },

  wgc_browser_compilation_info__deps: ['$WGCB'],
  wgc_browser_compilation_info: function(op, moduleId) {
    WebGPU.mgrShaderModule.get(moduleId).getCompilationInfo().then(function(info) {
      info.messages.forEach(function(m) {
        var p = WGCB.str(m.message);
        _wgc_browser_compilation_message(op, m.type === 'error' ? 1 : m.type === 'warning' ? 2 : 3, m.lineNum,
                                         m.linePos, p);
        _free(p);
      });
      _wgc_browser_compilation_done(op, 1);
    }, function() { _wgc_browser_compilation_done(op, 0); });
  },

  // desc: a 2022 WGPUComputePipelineDescriptor; only its compute stage and layout are read.
  wgc_browser_create_pipeline_async__deps: ['$WGCB'],
  wgc_browser_create_pipeline_async: function(op, deviceId, desc) {
    var device = WebGPU.mgrDevice.get(deviceId);
    var layoutId = {{{ makeGetValue('desc', C_STRUCTS.WGPUComputePipelineDescriptor.layout, '*') }}};
    var labelPtr = {{{ makeGetValue('desc', C_STRUCTS.WGPUComputePipelineDescriptor.label, '*') }}};
    var d = {
      label: labelPtr ? UTF8ToString(labelPtr) : undefined,
      layout: layoutId ? WebGPU.mgrPipelineLayout.get(layoutId) : 'auto',
      compute: WebGPU.makeProgrammableStageDescriptor(desc + {{{ C_STRUCTS.WGPUComputePipelineDescriptor.compute }}}),
    };
    device.createComputePipelineAsync(d).then(function(pipeline) {
      _wgc_browser_pipeline_done(op, WebGPU.mgrComputePipeline.create(pipeline), 0);
    }, function(e) { _wgc_browser_pipeline_done(op, 0, WGCB.str(e.message)); });
  },
});
