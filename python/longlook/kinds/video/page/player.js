// longlook's dash.js page: plays ?mpd=URL with ?abr=bola|throughput and keeps what the
// driver samples over the DevTools protocol once a second (window.llSample()). Times are
// performance.now() in ms. ?warmup=1 loads nothing (the Alt-Svc discovery visit).
// The driver injects it, run once the DOM is there (after dash.js).
(function () {
  "use strict";
  const params = new URLSearchParams(location.search);
  const events = [];
  const note = (type, extra) => events.push(Object.assign({type: type, t: performance.now()}, extra || {}));
  let lastError = null;
  let rendered = null;
  window.llEvents = events;
  if (params.get("warmup")) { window.llSample = () => ({warmup: true}); return; }
  const video = document.getElementById("video");
  ["waiting", "playing", "stalled", "ended", "error", "canplay", "play", "pause", "seeking"].forEach(
    (name) => video.addEventListener(name, () => note("video:" + name, {position: video.currentTime})));
  if (typeof dashjs === "undefined") { lastError = "dash.js did not load"; }
  let player = null;
  if (!lastError) {
    player = dashjs.MediaPlayer().create();
    const E = dashjs.MediaPlayer.events;
    player.updateSettings({
      debug: {logLevel: dashjs.Debug.LOG_LEVEL_WARNING},
      streaming: {
        abr: {ABRStrategy: params.get("abr") === "throughput" ? "abrThroughput" : "abrBola",
              autoSwitchBitrate: {video: true, audio: true}},
        buffer: {fastSwitchEnabled: false},
      },
    });
    player.on(E.QUALITY_CHANGE_RENDERED, (e) => {
      if (e.mediaType === "video") { rendered = e.newQuality; note("dash:quality_rendered", {quality: e.newQuality}); }
    });
    player.on(E.QUALITY_CHANGE_REQUESTED, (e) => {
      if (e.mediaType === "video") note("dash:quality_requested", {quality: e.newQuality});
    });
    [["BUFFER_EMPTY", "dash:buffer_empty"], ["PLAYBACK_STALLED", "dash:stalled"],
     ["PLAYBACK_WAITING", "dash:waiting"], ["PLAYBACK_PLAYING", "dash:playing"],
     ["PLAYBACK_ENDED", "dash:ended"], ["BUFFER_LOADED", "dash:buffer_loaded"]].forEach(
      ([k, name]) => player.on(E[k], (e) => { if (!e || !e.mediaType || e.mediaType === "video") note(name); }));
    player.on(E.ERROR, (e) => {
      const err = e && e.error ? e.error : e;
      lastError = "dash.js error " + (err && err.code !== undefined ? err.code + ": " : "") +
        (err && err.message ? err.message : JSON.stringify(err));
      note("dash:error", {message: lastError});
    });
    player.initialize(video, params.get("mpd"), true);
  }
  window.llSample = function () {
    const out = {now: performance.now(), position: video.currentTime, duration: video.duration,
                 paused: video.paused, ended: video.ended, readyState: video.readyState,
                 rendered: rendered, error: lastError, buffer: null, quality: null,
                 dropped: null, frames: null, events: events.splice(0, events.length)};
    if (video.error) { out.error = out.error || ("media error " + video.error.code + ": " + video.error.message); }
    const q = video.getVideoPlaybackQuality ? video.getVideoPlaybackQuality() : null;
    if (q) { out.dropped = q.droppedVideoFrames; out.frames = q.totalVideoFrames; }
    if (player) {
      try { out.buffer = player.getDashMetrics().getCurrentBufferLevel("video"); } catch (e) { /* not yet */ }
      try { out.quality = player.getQualityFor("video"); } catch (e) { /* not yet */ }
    }
    return out;
  };
})();
