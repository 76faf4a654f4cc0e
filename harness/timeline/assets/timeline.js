// chaosrun timeline: draws the page's inline data (see harness/timeline) as
// SVG. No network, no library: everything the page needs is in the file.
(function () {
  'use strict';
  var started = performance.now();
  var D = JSON.parse(document.getElementById('data').textContent);
  var parsed = performance.now();
  var FILE_CODE = ['h', 'l', 'f', 'w'];
  var LABEL_W = 190, CALL_H = 18, SESSION_H = 33, WIRE_H = 33, GROUP_WIRE_H = 12, LANE_GAP = 7, AXIS_H = 34;
  // A session row has three tracks: what the client saw, the side effects,
  // and what the server did.
  var TRACK = { charge: 1, dedup: 1, tool: 2, result: 2, dropped: 2, session_close: 2 };
  var GROUP_AT = 40;        // more lanes than this are drawn as groups
  var GROUPS = 30;          // about this many groups
  var FEATURED = 12;        // lanes named by violated evidence, drawn on their own
  var MAX_TICKS_ROW = 400;  // more events than this in a row become one density path

  var plot = document.getElementById('plot');
  var tip = document.getElementById('tip');
  var detail = document.getElementById('detail');
  var view = { from: 0, to: D.end_us * 1.02 };
  var selected = new Set();     // mark indexes
  var selectedFaults = new Set();
  var openGroups = new Set();

  // Record lookup: (file, line or n) to the record's JSON line. The record
  // files are gzipped base64 in their script elements, decoded (in the
  // browser, no network) once the page is drawn.
  var recs = [], index = [], loading = null;
  function loadRecords() {
    if (loading) return loading;
    loading = Promise.all(D.files.map(function (_, f) {
      var bin = atob(document.getElementById('records-' + f).textContent.trim());
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text().then(function (text) {
        recs[f] = text ? text.split('\n') : [];
        index[f] = new Map();
        var lines = D.lines[f];
        for (var i = 0; i < recs[f].length; i++) index[f].set(lines && lines.length ? lines[i] : i + 1, i);
      });
    }));
    return loading;
  }
  function record(r) {
    var j = index[r[0]] && index[r[0]].get(r[1]);
    return j === undefined ? null : recs[r[0]][j];
  }
  function refKey(r) { return FILE_CODE[r[0]] + r[1]; }
  function refName(r) {
    return D.files[r[0]] + (r[0] === 1 || r[0] === 3 ? ' n=' + r[1] : ' line ' + r[1]);
  }

  // Marks by lane, and the lanes the violated evidence names.
  var byLane = D.lanes.map(function () { return []; });
  D.marks.forEach(function (m, i) { byLane[m.c].push(i); });
  var refMarks = null; // ref key to mark indexes, built on first use
  function marksOf(refs) {
    if (!refMarks) {
      refMarks = new Map();
      D.marks.forEach(function (m, i) {
        (m.f || []).forEach(function (r) {
          var k = refKey(r);
          if (!refMarks.has(k)) refMarks.set(k, []);
          refMarks.get(k).push(i);
        });
      });
    }
    var out = new Set();
    refs.forEach(function (r) { (refMarks.get(refKey(r)) || []).forEach(function (i) { out.add(i); }); });
    return out;
  }
  function faultsOf(refs) {
    var keys = new Set(refs.map(refKey)), out = new Set();
    D.faults.forEach(function (f, i) { if (f.refs.some(function (r) { return keys.has(refKey(r)); })) out.add(i); });
    return out;
  }

  // Layout: every lane on its own, or groups of lanes past GROUP_AT.
  var featured = new Set();
  (D.results || []).forEach(function (res) {
    if (res.status !== 'violated') return;
    (res.evidence || []).forEach(function (e) {
      marksOf(e.refs || []).forEach(function (i) { if (featured.size < FEATURED) featured.add(D.marks[i].c); });
    });
  });
  var items = []; // {lane} or {group: [lane indexes], name}
  if (D.lanes.length <= GROUP_AT) {
    D.lanes.forEach(function (_, i) { items.push({ lane: i }); });
  } else {
    featured.forEach(function (i) { items.push({ lane: i, featured: true }); });
    var rest = D.lanes.map(function (_, i) { return i; }).filter(function (i) { return !featured.has(i); });
    var size = Math.ceil(rest.length / GROUPS);
    for (var g = 0; g < rest.length; g += size) {
      var members = rest.slice(g, g + size);
      items.push({ group: members, name: D.lanes[members[0]].client + ' … ' + D.lanes[members[members.length - 1]].client });
    }
  }

  function rowHeight(kind) { return kind === 'calls' ? CALL_H : kind === 'wire' ? WIRE_H : SESSION_H; }

  // ---- drawing ----------------------------------------------------------
  function width() { return Math.max(400, plot.clientWidth - LABEL_W - 12); }
  function x(us, w) { return LABEL_W + (us - view.from) / (view.to - view.from) * w; }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
  }
  function secs(us) {
    var span = view.to - view.from;
    var d = span < 2e4 ? 4 : span < 2e5 ? 3 : span < 2e6 ? 2 : 1;
    return (us / 1e6).toFixed(d) + 's';
  }
  function refsAttr(m) { return (m.f || []).map(refKey).join(' '); }

  function niceStep(span, px) {
    var raw = span / Math.max(2, px / 90);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  function axis(w, totalH) {
    var s = [];
    var step = niceStep(view.to - view.from, w);
    var first = Math.ceil(view.from / step) * step;
    for (var t = first; t <= view.to; t += step) {
      var px = x(t, w);
      s.push('<g class="tick" data-us="' + Math.round(t) + '"><line x1="' + px + '" x2="' + px + '" y1="' + (AXIS_H - 8) + '" y2="' + totalH + '"/>' +
        '<text x="' + px + '" y="' + (AXIS_H - 12) + '">' + secs(t) + '</text></g>');
    }
    return s.join('');
  }

  function faultRects(w, top, h) {
    return D.faults.map(function (f, i) {
      var x0 = Math.max(LABEL_W, x(f.from, w)), x1 = Math.min(LABEL_W + w, x(f.to, w));
      if (x1 < LABEL_W || x0 > LABEL_W + w) return '';
      var cls = 'fault' + (f.error ? ' failed' : '') + (selectedFaults.has(i) ? ' sel' : '');
      return '<g class="' + cls + '" data-fault="' + i + '" data-kind="' + esc(f.kind) + '" data-refs="' + f.refs.map(refKey).join(' ') +
        '" data-from="' + f.from + '" data-to="' + f.to + '"><rect x="' + x0 + '" y="' + top + '" width="' + Math.max(1, x1 - x0) +
        '" height="' + h + '"/><text x="' + (x0 + 3) + '" y="' + (top + 11) + '">' + esc(f.kind) + '</text></g>';
    }).join('');
  }

  // A point mark's glyph, centred on 0,0.
  var GLYPH = {
    event: '<line y1="-4" y2="4"/>',
    break: '<path d="M-4,-4L4,4M4,-4L-4,4"/>',
    reconnect: '<circle r="3.5"/>',
    resume: '<path d="M-3,-4L4,0L-3,4Z"/>',
    gap: '<path d="M0,-5L5,0L0,5L-5,0Z"/>',
    session_new: '<path d="M0,-6V6M0,-6H5"/>',
    session_lost: '<path d="M0,-6V6M-4,6H4"/>',
    charge: '<circle r="5"/><text y="3.5">$</text>',
    dedup: '<circle r="4"/>',
    result: '<path d="M0,-5L5,0L0,5L-5,0Z"/>',
    dropped: '<path d="M0,-4L4,0L0,4L-4,0Z"/>',
    session_close: '<path d="M-3,-5H3M0,-5V5"/>',
    retry: '<path d="M-4,4L0,-4L4,4Z"/>',
    client_start: '<path d="M0,-6V6M0,-6L5,-3L0,0"/>',
    client_stop: '<rect x="-3" y="-3" width="6" height="6"/>',
    wire_request: '<path d="M0,4V-4M-2,-2L0,-4L2,-2"/>',
    wire_response: '<rect x="-3" y="-3" width="6" height="6"/>',
    wire_close: '<path d="M-3,-3L3,3M3,-3L-3,3"/>',
    wire_malformed: '<circle r="3"/>'
  };
  var RANGES = { call: 1, tool: 1, fork: 1, silent: 1, gap_range: 1 };

  function markClass(m, i) {
    return 'm k-' + m.k + (m.s ? ' s-' + m.s : '') + (selected.has(i) ? ' sel' : '');
  }

  function rangeEl(m, i, w, y, h, inset) {
    var end = m.e || (m.k === 'call' || m.k === 'tool' ? D.end_us : m.t);
    var x0 = x(m.t, w), x1 = x(end, w);
    if (x1 < LABEL_W || x0 > LABEL_W + w) return '';
    x0 = Math.max(LABEL_W, x0); x1 = Math.min(LABEL_W + w, x1);
    return '<rect class="' + markClass(m, i) + '" data-m="' + i + '" data-refs="' + refsAttr(m) + '" data-t="' + m.t + '" x="' + x0 +
      '" y="' + (y + inset) + '" width="' + Math.max(2, x1 - x0) + '" height="' + Math.max(2, h - 2 * inset) + '"/>';
  }

  // points draws point marks of one row, one glyph per kind, state and pixel
  // (the first mark there; data-n counts the rest), and events as ticks or,
  // when there are many, as one density path.
  function points(list, w, y, h, tracks) {
    var out = [], seen = new Map(), ticks = [];
    function cy(m) { return tracks ? y + 5.5 + (TRACK[m.k] || 0) * 11 : y + h / 2; }
    list.forEach(function (i) {
      var m = D.marks[i];
      if (RANGES[m.k] || m.t < view.from || m.t > view.to) return;
      if (m.k === 'event') { ticks.push(i); return; }
      var px = Math.round(x(m.t, w));
      var key = m.k + '|' + (m.s || '') + '|' + px + '|' + m.r;
      var prev = seen.get(key);
      if (prev) { prev.n++; return; }
      seen.set(key, { i: i, px: px, n: 1 });
    });
    if (ticks.length > MAX_TICKS_ROW) {
      var cols = new Map();
      ticks.forEach(function (i) { var px = Math.round(x(D.marks[i].t, w)); cols.set(px, (cols.get(px) || 0) + 1); });
      var d = '';
      var base = tracks ? y + 10 : y + h - 2, room = tracks ? 9 : h - 4;
      cols.forEach(function (n, px) { d += 'M' + px + ',' + base + 'v' + (-Math.min(room, 2 + Math.log2(n) * 2)); });
      out.push('<path class="m k-event density" data-n="' + ticks.length + '" d="' + d + '"/>');
    } else {
      ticks.forEach(function (i) { seen.set('e' + i, { i: i, px: x(D.marks[i].t, w), n: 1 }); });
    }
    seen.forEach(function (p) {
      var m = D.marks[p.i];
      out.push('<g class="' + markClass(m, p.i) + '" data-m="' + p.i + '" data-refs="' + refsAttr(m) + '" data-t="' + m.t +
        (p.n > 1 ? '" data-n="' + p.n : '') + '" transform="translate(' + p.px + ',' + cy(m) + ')">' + (GLYPH[m.k] || '<circle r="3"/>') + '</g>');
    });
    return out.join('');
  }

  // One lane on its own: its rows, top to bottom.
  function laneSVG(li, w, y, label) {
    var lane = D.lanes[li], out = [], ys = [], h0 = y;
    lane.rows.forEach(function (r) { ys.push(y); y += rowHeight(r.kind); });
    var rowMarks = lane.rows.map(function () { return []; });
    byLane[li].forEach(function (i) { rowMarks[D.marks[i].r].push(i); });
    out.push('<g class="lane" data-client="' + esc(lane.client) + '"><rect class="lane-bg" x="0" y="' + h0 + '" width="' + (LABEL_W + w) + '" height="' + (y - h0) + '"/>');
    out.push('<text class="lane-label" x="6" y="' + (h0 + 13) + '">' + esc(label || lane.client) + '</text>');
    lane.rows.forEach(function (r, ri) {
      var ry = ys[ri], rh = rowHeight(r.kind);
      out.push('<g class="row row-' + r.kind + '"' + (r.session ? ' data-session="' + esc(r.session) + '"' : '') +
        ' data-y="' + ry + '" data-h="' + rh + '"><rect class="row-bg" x="' + LABEL_W + '" y="' + ry + '" width="' + w + '" height="' + rh + '"/>');
      if (r.kind === 'session') {
        out.push('<text class="row-label" x="22" y="' + (ry + 13) + '">session ' + esc(r.session.slice(0, 8)) + (r.state ? ' (' + r.state + ')' : '') + '</text>');
        if (r.from || r.to) {
          var span = { k: 'span', t: r.from, e: r.to || D.end_us, f: r.refs, s: r.state };
          var x0 = Math.max(LABEL_W, x(span.t, w)), x1 = Math.min(LABEL_W + w, x(span.e, w));
          if (x1 > x0) out.push('<rect class="span' + (r.state ? ' s-' + r.state : '') + '" data-refs="' + refsAttr(span) + '" x="' + x0 + '" y="' + (ry + 1) + '" width="' + (x1 - x0) + '" height="' + (rh - 2) + '"/>');
        }
      } else if (r.kind === 'wire') {
        out.push('<text class="row-label" x="22" y="' + (ry + 13) + '">wire (both edges)</text>');
      } else {
        out.push('<text class="row-label" x="22" y="' + (ry + 26) + '"></text>');
      }
      rowMarks[ri].forEach(function (i) {
        var m = D.marks[i];
        if (!RANGES[m.k]) return;
        if (m.k === 'tool') out.push(rangeEl(m, i, w, ry + 22, 11, 2));
        else out.push(rangeEl(m, i, w, ry, rh, m.k === 'call' ? 3 : 1));
      });
      out.push(points(rowMarks[ri], w, ry, rh, r.kind !== 'calls'), '</g>');
    });
    out.push('</g>');
    return { svg: out.join(''), h: y - h0 };
  }

  // A group of lanes as three rows: calls in flight by outcome, everything
  // else the members did, and their wire.
  function groupSVG(item, gi, w, y) {
    var out = [], h0 = y, states = ['ok', 'fail', 'unknown', 'unresolved'];
    var bins = Math.max(1, Math.floor(w / 3)), counts = states.map(function () { return new Float64Array(bins); });
    var activity = [], wires = [], ranges = [];
    item.group.forEach(function (li) {
      var lane = D.lanes[li];
      byLane[li].forEach(function (i) {
        var m = D.marks[i];
        if (m.k === 'call') {
          var si = Math.max(0, states.indexOf(m.s));
          var b0 = Math.floor((m.t - view.from) / (view.to - view.from) * bins);
          var b1 = Math.floor(((m.e || D.end_us) - view.from) / (view.to - view.from) * bins);
          for (var b = Math.max(0, b0); b <= Math.min(bins - 1, b1); b++) counts[si][b]++;
        } else if (lane.rows[m.r].kind === 'wire') {
          wires.push(i);
        } else if (m.k === 'fork' || m.k === 'silent' || m.k === 'gap_range') {
          ranges.push(i);
        } else if (m.k !== 'tool') {
          activity.push(i);
        }
      });
    });
    var label = (openGroups.has(gi) ? '▾ ' : '▸ ') + item.group.length + ' clients: ' + item.name;
    out.push('<g class="group" data-group="' + gi + '"><rect class="lane-bg" x="0" y="' + y + '" width="' + (LABEL_W + w) + '" height="' + (CALL_H * 2 + SESSION_H + (wires.length ? GROUP_WIRE_H : 0)) + '"/>');
    out.push('<text class="lane-label group-label" data-group="' + gi + '" x="6" y="' + (y + 13) + '">' + esc(label) + '</text>');
    var max = 1;
    for (var b = 0; b < bins; b++) max = Math.max(max, counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b]);
    var base = new Float64Array(bins), hh = CALL_H * 2 - 4;
    out.push('<g class="row row-calls-agg"><rect class="row-bg" x="' + LABEL_W + '" y="' + y + '" width="' + w + '" height="' + CALL_H * 2 + '"/>');
    states.forEach(function (s, si) {
      var d = '';
      for (var b = 0; b < bins; b++) {
        if (!counts[si][b]) continue;
        var top = base[b] + counts[si][b];
        d += 'M' + (LABEL_W + b * 3) + ',' + (y + CALL_H * 2 - 2 - base[b] / max * hh) + 'h3V' + (y + CALL_H * 2 - 2 - top / max * hh) + 'h-3Z';
        base[b] = top;
      }
      if (d) out.push('<path class="agg s-' + s + '" d="' + d + '"><title>calls in flight: ' + s + '</title></path>');
    });
    out.push('<text class="row-label" x="22" y="' + (y + 28) + '">calls in flight (max ' + max + ')</text></g>');
    y += CALL_H * 2;
    out.push('<g class="row row-activity" data-y="' + y + '"><rect class="row-bg" x="' + LABEL_W + '" y="' + y + '" width="' + w + '" height="' + SESSION_H + '"/>');
    ranges.forEach(function (i) { out.push(rangeEl(D.marks[i], i, w, y, SESSION_H, 1)); });
    out.push(points(activity, w, y, SESSION_H, true), '</g>');
    y += SESSION_H;
    if (wires.length) {
      out.push('<g class="row row-wire"><rect class="row-bg" x="' + LABEL_W + '" y="' + y + '" width="' + w + '" height="' + GROUP_WIRE_H + '"/>' + points(wires, w, y, GROUP_WIRE_H) + '</g>');
      y += GROUP_WIRE_H;
    }
    out.push('</g>');
    if (openGroups.has(gi)) {
      item.group.forEach(function (li) {
        var l = laneSVG(li, w, y + 2);
        out.push(l.svg);
        y += l.h + 2;
      });
    }
    return { svg: out.join(''), h: y - h0 };
  }

  var frame = 0;
  function render() { if (!frame) frame = requestAnimationFrame(draw); }
  function draw() {
    frame = 0;
    var w = width(), body = [], y = 4;
    items.forEach(function (it, gi) {
      var part = it.group ? groupSVG(it, gi, w, y) : laneSVG(it.lane, w, y, it.featured ? '★ ' + D.lanes[it.lane].client : '');
      body.push(part.svg);
      y += part.h + LANE_GAP;
    });
    var h = y + 4;
    plot.innerHTML =
      '<svg id="axis" width="' + (LABEL_W + w + 4) + '" height="' + AXIS_H + '">' + axis(w, AXIS_H) + faultRects(w, 0, 14) + '</svg>' +
      '<div id="lanes-scroll"><svg id="lanes" width="' + (LABEL_W + w + 4) + '" height="' + h + '">' +
      '<g class="grid">' + axis(w, h).replace(/<text[^>]*>[^<]*<\/text>/g, '') + '</g>' +
      body.join('') + '<g class="faults-over">' + faultRects(w, 0, h) + '</g></svg></div>';
    document.getElementById('view').textContent = secs(view.from) + ' – ' + secs(view.to);
  }

  // ---- zoom and pan -----------------------------------------------------
  function zoom(factor, atUS) {
    var span = (view.to - view.from) * factor;
    span = Math.max(100, Math.min(span, D.end_us * 4));
    var at = atUS === undefined ? (view.from + view.to) / 2 : atUS;
    var rel = (at - view.from) / (view.to - view.from);
    view.from = at - rel * span;
    view.to = view.from + span;
    render();
  }
  function usAt(clientX) {
    var r = plot.getBoundingClientRect();
    return view.from + (clientX - r.left - LABEL_W) / width() * (view.to - view.from);
  }
  function fit(from, to) {
    var pad = Math.max((to - from) * 0.15, 2000);
    view.from = from - pad;
    view.to = to + pad;
    render();
  }
  document.getElementById('toolbar').addEventListener('click', function (e) {
    var act = e.target.getAttribute('data-act');
    if (act === 'in') zoom(0.5);
    if (act === 'out') zoom(2);
    if (act === 'fit') { view.from = 0; view.to = D.end_us * 1.02; render(); }
  });
  plot.addEventListener('wheel', function (e) {
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      zoom(Math.pow(1.0015, e.deltaY), usAt(e.clientX));
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      var d = (e.shiftKey ? e.deltaY : e.deltaX) / width() * (view.to - view.from);
      view.from += d; view.to += d; render();
    }
  }, { passive: false });
  plot.addEventListener('dblclick', function (e) { zoom(0.5, usAt(e.clientX)); });
  var drag = null;
  plot.addEventListener('mousedown', function (e) { drag = { x: e.clientX, from: view.from, to: view.to, moved: false }; });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    var dx = e.clientX - drag.x;
    if (Math.abs(dx) > 3) drag.moved = true;
    if (!drag.moved) return;
    var d = -dx / width() * (drag.to - drag.from);
    view.from = drag.from + d; view.to = drag.to + d; render();
  });
  window.addEventListener('mouseup', function () { setTimeout(function () { drag = null; }, 0); });
  window.addEventListener('keydown', function (e) {
    if (e.target.tagName === 'INPUT') return;
    if (e.key === '+' || e.key === '=') zoom(0.5);
    if (e.key === '-') zoom(2);
    if (e.key === '0') { view.from = 0; view.to = D.end_us * 1.02; render(); }
  });
  window.addEventListener('resize', render);

  // ---- records on hover and click ---------------------------------------
  function describe(el) {
    if (el.hasAttribute('data-fault')) {
      var f = D.faults[+el.getAttribute('data-fault')];
      return { title: f.label + (f.error ? ' (failed: ' + f.error + ')' : ''), t: f.from, e: f.to, refs: f.refs };
    }
    var m = D.marks[+el.getAttribute('data-m')];
    var n = +(el.getAttribute('data-n') || 1);
    return { title: (m.l || m.k.replace('_', ' ')) + (n > 1 ? ' (and ' + (n - 1) + ' more here: zoom in)' : ''), t: m.t, e: m.e, refs: m.f || [] };
  }
  function markAt(target) {
    for (var el = target; el && el !== plot; el = el.parentNode) {
      if (el.hasAttribute && (el.hasAttribute('data-m') || el.hasAttribute('data-fault'))) return el;
    }
    return null;
  }
  plot.addEventListener('mousemove', function (e) {
    var el = markAt(e.target);
    if (!el || drag) { tip.hidden = true; return; }
    var d = describe(el);
    tip.innerHTML = '<b>' + esc(d.title) + '</b><br>' + secs(d.t) + (d.e ? ' – ' + secs(d.e) : '') +
      '<br><span class="src">' + d.refs.slice(0, 3).map(refName).map(esc).join(', ') + (d.refs.length > 3 ? ', …' : '') + '</span>';
    tip.hidden = false;
    tip.style.left = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + 'px';
    tip.style.top = (e.clientY + 14) + 'px';
  });
  plot.addEventListener('mouseleave', function () { tip.hidden = true; });
  plot.addEventListener('click', function (e) {
    if (drag && drag.moved) return;
    var g = e.target.getAttribute && e.target.getAttribute('data-group');
    if (g !== null && g !== undefined && e.target.classList.contains('group-label')) {
      g = +g;
      if (openGroups.has(g)) openGroups.delete(g); else openGroups.add(g);
      render();
      return;
    }
    var el = markAt(e.target);
    if (el) show(describe(el));
  });
  function show(d) { loadRecords().then(function () { showNow(d); }); }
  function showNow(d) {
    var parts = ['<button type="button" class="close" title="close">×</button><h3>' + esc(d.title) + '</h3><p>' + secs(d.t) +
      (d.e ? ' – ' + secs(d.e) : '') + '</p>'];
    d.refs.forEach(function (r) {
      var rec = record(r), pretty = rec;
      try { pretty = JSON.stringify(JSON.parse(rec), null, 2); } catch (err) { /* shown as it is */ }
      parts.push('<div class="rec" data-ref="' + refKey(r) + '"><div class="src">' + esc(refName(r)) + '</div><pre>' + esc(pretty || '(not in the records)') + '</pre></div>');
    });
    detail.innerHTML = parts.join('');
    detail.hidden = false;
  }
  detail.addEventListener('click', function (e) { if (e.target.classList.contains('close')) detail.hidden = true; });

  // ---- the verdict, linked to its evidence -----------------------------
  function header() {
    var h = ['<h1>' + esc(D.name) + ' <span class="verdict v-' + esc(D.verdict) + '">' + esc(D.verdict) + '</span>'];
    if (D.expected) h.push(' <span class="expect ' + (D.met ? 'met' : 'unmet') + '">expected ' + esc(D.expected) + ': ' + (D.met ? 'met' : 'NOT met') + '</span>');
    h.push('</h1>');
    if (D.partial) h.push('<p class="partial">Partial results: ' + esc(D.partial) + '</p>');
    if (D.description) h.push('<p class="desc">' + esc(D.description) + '</p>');
    (D.reasons || []).forEach(function (r) { h.push('<p class="reason">' + esc(r) + '</p>'); });
    var f = D.figures;
    h.push('<p class="figures">' + [['calls', f.calls], ['charges', f.charges], ['duplicates', f.duplicates], ['orphaned results', f.orphaned_results],
      ['forks', f.forks], ['lost silently', f.events_lost_silent], ['lost in gaps', f.events_lost_surfaced], ['unknown', f.calls_unknown],
      ['unresolved', f.calls_unresolved]].map(function (p, i) { return '<span' + (p[1] && i >= 2 && i !== 7 ? ' class="nz"' : '') + '>' + p[0] + ' <b>' + p[1] + '</b></span>'; }).join('') + '</p>');
    h.push('<ul class="results">');
    (D.results || []).forEach(function (r, ri) {
      h.push('<li class="res ' + (r.status === 'violated' ? 'violated' : r.status === 'held' ? 'held' : 'unjudged') + '" data-id="' + esc(r.id) + '"><span class="rid">' + esc(r.id) + '</span> <span class="st">' +
        esc(r.status.replace('_', ' ')) + '</span> ' + esc(r.summary) + (r.account ? ' <span class="acct">(' + esc(r.account) + ')</span>' : '') +
        (r.disagreement ? ' <span class="disagree">the wire says: ' + esc(r.disagreement) + '</span>' : ''));
      if (r.evidence && r.evidence.length) {
        h.push('<ul>');
        r.evidence.forEach(function (e, ei) {
          h.push('<li><a href="#" class="ev" data-r="' + ri + '" data-e="' + ei + '">' + esc(e.text) + '</a></li>');
        });
        if (r.omitted) h.push('<li class="omitted">(+' + r.omitted + ' more)</li>');
        h.push('</ul>');
      }
      h.push('</li>');
    });
    h.push('</ul>');
    document.getElementById('head').innerHTML = h.join('');
  }
  document.getElementById('head').addEventListener('click', function (e) {
    if (!e.target.classList.contains('ev')) return;
    e.preventDefault();
    var ev = D.results[+e.target.getAttribute('data-r')].evidence[+e.target.getAttribute('data-e')];
    selected = marksOf(ev.refs || []);
    selectedFaults = faultsOf(ev.refs || []);
    var from = Infinity, to = -Infinity;
    selected.forEach(function (i) {
      var m = D.marks[i];
      from = Math.min(from, m.t); to = Math.max(to, m.e || m.t);
      items.forEach(function (it, gi) { if (it.group && it.group.indexOf(m.c) >= 0) openGroups.add(gi); });
    });
    selectedFaults.forEach(function (i) { from = Math.min(from, D.faults[i].from); to = Math.max(to, D.faults[i].to); });
    document.querySelectorAll('.ev.on').forEach(function (a) { a.classList.remove('on'); });
    e.target.classList.add('on');
    if (from <= to) fit(from, to); else render();
    if (ev.refs && ev.refs.length) show({ title: ev.text, t: from === Infinity ? 0 : from, e: to > from ? to : 0, refs: ev.refs });
  });

  function legend() {
    var rows = [
      ['call s-ok', 'call ok', 'r'], ['call s-fail', 'call failed', 'r'], ['call s-unknown', 'call unknown outcome', 'r'],
      ['call s-unresolved', 'call unresolved', 'r'], ['tool', 'tool running on the server', 'r'], ['event', 'SSE event received', 'event'],
      ['break', 'stream break', 'break'], ['reconnect', 'reconnect', 'reconnect'], ['resume', 'resume (Last-Event-ID)', 'resume'],
      ['session_new', 'new session', 'session_new'], ['session_lost', 'session dropped or lost', 'session_lost'],
      ['gap', 'gap surfaced', 'gap'], ['gap_range', 'events lost inside a surfaced gap', 'r'], ['silent', 'events lost silently', 'r'],
      ['charge', 'charge (ledger)', 'charge'], ['charge s-original', 'original charge of an order charged again', 'charge'], ['charge s-dup', 'duplicate charge', 'charge'], ['result', 'result written and read', 'result'],
      ['result s-orphan', 'orphaned result (never read)', 'result'], ['result s-orphan_surfaced', 'unread result of an unknown outcome', 'result'],
      ['fork', 'session fork', 'r'], ['retry', 'retry', 'retry'], ['retry s-blind', 'blind retry after an unknown outcome', 'retry']];
    if (D.has_wire) rows.push(['wire_request', 'request on the wire', 'wire_request'], ['wire_response', 'HTTP error on the wire', 'wire_response'], ['wire_close', 'connection closed', 'wire_close']);
    var out = ['<span class="lg"><svg width="22" height="14"><rect class="fault-swatch" x="0" y="0" width="22" height="14"/></svg>fault window</span>'];
    rows.forEach(function (r) {
      var k = r[0].split(' '), cls = 'm k-' + k[0] + (k[1] ? ' ' + k[1] : '');
      var g = r[2] === 'r' ? '<rect class="' + cls + '" x="1" y="3" width="20" height="8"/>' : '<g class="' + cls + '" transform="translate(11,7)">' + GLYPH[r[2]] + '</g>';
      out.push('<span class="lg"><svg width="22" height="14">' + g + '</svg>' + esc(r[1]) + '</span>');
    });
    document.getElementById('legend').innerHTML = out.join('');
  }

  header();
  legend();
  draw();
  setTimeout(loadRecords, 0);
  // drawnAt is when the first drawing was done, in ms since navigation began.
  window.chaosrunTimeline = { view: view, ready: true, startedAt: started, parsedAt: parsed, drawnAt: performance.now() };
})();
