// The engine's JavaScript import for reading a model (wasm/engine_api.cpp's JsSource): the worker
// (web/local/wgc-worker.js) sets Module.wgcSource = {size, read(offset, n, put)}, whose read
// resolves once put(bytes, at) has copied the bytes [offset, offset + n) of the model, at `at` in
// the range (from the download as it arrives, or from slices of the user's File). wgc_source_read
// sleeps (an ASYNCIFY yield) until then: the tensor's bytes go straight into the buffer the engine
// gave, one tensor at a time. A failure's message is kept for wgc_source_error.
mergeInto(LibraryManager.library, {
  wgc_source_read: function(offset, ptr, n) {
    ptr = ptr >>> 0;
    return Asyncify.handleSleep(function(wakeUp) {
      Promise.resolve()
        .then(function() {
          var src = Module['wgcSource'];
          if (!src) throw new Error('no model is being loaded');
          return src.read(offset, n, function(bytes, at) { HEAPU8.set(bytes, ptr + at); });
        })
        .then(function() { wakeUp(0); },
              function(e) {
                Module['wgcSourceError'] = (e && e.message) || String(e);
                wakeUp(1);
              });
    });
  },

  // The last failed read's message, in memory the caller frees.
  wgc_source_error: function() {
    var s = Module['wgcSourceError'] || 'the model could not be read';
    var n = lengthBytesUTF8(s) + 1;
    var p = _malloc(n);
    stringToUTF8(s, p, n);
    return p;
  },
  wgc_source_error__deps: ['malloc'],
});
