// contextlens: a plotly figure fitted to a narrow screen (a phone), on the web pages and in the reports.
// Side-by-side panels are stacked one above the other at the full width, a wide figure's labels shrink,
// and the title wraps and sits below the toolbar (modebar), so neither the page nor the figure's box
// scrolls sideways and the toolbar never covers the title. Only the layout changes: every number,
// point and label a figure shows stays the same. Served as /static/fit.js and inlined in the reports.
// Each figure is drawn no more than it is seen: once per change of the window's width, and a figure
// in a hidden box (the quiz's evidence) only once the box is shown (show).
(function (root) {
  "use strict";
  var NARROW = 640;   // px: below this a figure is fitted (the pages' phone CSS uses the same width)
  var TOOLBAR = 44;   // px the modebar takes at the top right: the title starts below it
  var GAP = 110;      // px at least between stacked panels (gapBetween)
  var LINE = 18;      // px per line of a 14 px title
  var SUBTITLE_SIDE = 56;  // px a panel keeps at each side for its tick labels and colour bar

  // A deep copy that keeps typed arrays (plotly.py may send a figure's numbers as binary arrays).
  function copy(x) {
    if (Array.isArray(x)) return x.map(copy);
    if (ArrayBuffer.isView(x)) return x.slice();
    if (x && typeof x === "object") {
      var o = {};
      Object.keys(x).forEach(function (k) { o[k] = copy(x[k]); });
      return o;
    }
    return x;
  }
  function plainLength(s) { return s.replace(/<[^>]*>/g, "").replace(/&[a-z#0-9]+;/gi, "x").length; }

  // A title split at spaces into lines of at most `chars` visible characters (its own <br>s kept).
  function wrap(text, chars) {
    return String(text).split(/<br\s*\/?>/i).map(function (part) {
      var lines = [], line = "";
      part.split(" ").forEach(function (word) {
        var next = line ? line + " " + word : word;
        if (line && plainLength(next) > chars) { lines.push(line); line = word; } else { line = next; }
      });
      lines.push(line);
      return lines.join("<br>");
    }).join("<br>");
  }

  function titleText(t) { return t === undefined || t === null ? "" : (typeof t === "string" ? t : (t.text || "")); }

  // The panels side by side: x axes with a domain, left to right, each with the y axes anchored to it.
  function columns(layout) {
    var cols = [];
    Object.keys(layout).forEach(function (k) {
      var ax = layout[k];
      if (!/^xaxis\d*$/.test(k) || !ax || !ax.domain) return;
      var name = "x" + k.slice(5);
      var ys = Object.keys(layout).filter(function (y) {
        return /^yaxis\d*$/.test(y) && layout[y] && layout[y].anchor === name;
      });
      var yd = ys.length && layout[ys[0]].domain ? layout[ys[0]].domain : [0, 1];
      cols.push({ x: k, name: name, ys: ys, domain: ax.domain, ydomain: yd });
    });
    cols.sort(function (a, b) { return a.domain[0] - b.domain[0]; });
    var oneRow = cols.length > 1 && cols.every(function (c) {
      return c.ydomain[0] === cols[0].ydomain[0] && c.ydomain[1] === cols[0].ydomain[1];
    });
    return oneRow ? cols : [];
  }

  function columnOf(cols, x) {
    var best = 0, dist = Infinity;
    cols.forEach(function (c, i) {
      var d = x < c.domain[0] ? c.domain[0] - x : x > c.domain[1] ? x - c.domain[1] : 0;
      if (d < dist) { dist = d; best = i; }
    });
    return best;
  }

  // px between two stacked panels: the upper one's tick labels (words may stand rotated, up to
  // about 6 px a character) and axis title, then the lower one's title.
  function gapBetween(data, layout, cols) {
    var labels = 0;
    data.forEach(function (t) {
      if (Array.isArray(t.x)) t.x.forEach(function (v) { if (typeof v === "string") labels = Math.max(labels, plainLength(v)); });
    });
    var titled = cols.some(function (c) { return titleText(layout[c.x].title); });
    return Math.max(GAP, 30 + Math.min(labels * 6, 140) + (titled ? 26 : 0) + 30);
  }

  // Stack the columns into rows; paper positions (subplot titles, colour bars) move with their panel.
  function stack(data, layout, cols, plotHeight, gapPx) {
    var n = cols.length, gap = gapPx / plotHeight, h = (1 - gap * (n - 1)) / n;
    var rows = cols.map(function (c, i) { var hi = 1 - i * (h + gap); return [hi - h, hi]; });
    var byName = {};
    cols.forEach(function (c, i) {
      byName[c.name] = i;
      layout[c.x].domain = [0, 1];
      c.ys.forEach(function (y) { layout[y].domain = rows[i].slice(); });
    });
    function moveY(i, y) {
      var c = cols[i], r = rows[i], span = c.ydomain[1] - c.ydomain[0] || 1;
      return r[0] + (y - c.ydomain[0]) / span * (r[1] - r[0]);
    }
    (layout.annotations || []).forEach(function (a) {
      if (a.xref !== "paper" || a.yref !== "paper" || typeof a.x !== "number") return;
      var i = columnOf(cols, a.x), c = cols[i], w = c.domain[1] - c.domain[0] || 1;
      a.x = (a.x - c.domain[0]) / w;
      if (typeof a.y === "number") a.y = moveY(i, a.y);
    });
    data.forEach(function (t) {
      var i = byName[t.xaxis || "x"];
      var scaled = t.colorbar || /^(heatmap|contour|histogram2d)/.test(t.type || "");
      if (i === undefined || !scaled || t.showscale === false) return;
      t.colorbar = Object.assign({}, t.colorbar, {
        x: 1.01, xanchor: "left", y: (rows[i][0] + rows[i][1]) / 2, yanchor: "middle",
        len: (rows[i][1] - rows[i][0]) * ((t.colorbar && t.colorbar.len) || 1), lenmode: "fraction", thickness: 14
      });
    });
  }

  // Axis titles wrapped to the room they have (a long one was cut at both ends); the lines added.
  function wrapAxisTitles(layout, width, margin, panel) {
    var added = { x: 0, y: 0 };
    Object.keys(layout).forEach(function (k) {
      var m = /^([xy])axis\d*$/.exec(k), ax = layout[k];
      if (!m || !ax || !titleText(ax.title)) return;
      var room = m[1] === "x" ? width - margin.l - margin.r : panel;
      var text = wrap(titleText(ax.title), Math.max(16, Math.floor(room / 6.8)));  // 12 px: about 6.8 px a character
      added[m[1]] = Math.max(added[m[1]], text.split("<br>").length - 1);
      ax.title = Object.assign({}, typeof ax.title === "object" ? ax.title : {}, { text: text });
    });
    return added;
  }

  // A legend beside the plot takes half a phone's width: it goes below the (lowest) x axis instead,
  // unless the figure already put it below or across.
  function legendBelow(layout, plotHeight, xTitleLines) {
    var legend = layout.legend || {};
    if (layout.showlegend === false || legend.orientation === "h" || (typeof legend.y === "number" && legend.y < 0)) return;
    layout.legend = Object.assign({}, legend, {
      orientation: "h", x: 0, xanchor: "left", y: -(64 + 16 * xTitleLines) / plotHeight, yanchor: "top"
    });
  }

  // The figure as drawn at `width` px: the (data, layout) to draw, copies of the given ones.
  function fitted(data, layout, width) {
    data = (data || []).map(function (t) { return Object.assign({}, t); });  // only a trace's own keys change
    layout = copy(layout || {});
    if (!(width < NARROW)) return { data: data, layout: layout };
    var margin = Object.assign({ l: 80, r: 80, t: 100, b: 80 }, layout.margin);
    margin.l = Math.min(margin.l, 56);
    margin.r = Math.min(margin.r, 40);
    var cols = columns(layout);
    var plotHeight = (layout.height || 450) - (margin.t || 0) - (margin.b || 0);
    var panel = plotHeight;
    // Each panel's title (a subplot title: an annotation just above its panel) wrapped to the room
    // one panel has once stacked, at a phone's 13 px, before stacking moves the lower ones down (only
    // the top one was wrapped, and the second panel's title ran off the figure).
    var subChars = Math.max(16, Math.floor((width - 2 * Math.max(margin.l, SUBTITLE_SIDE) - 40) / 7.2));
    var subtitles = (layout.annotations || []).filter(function (a) {
      return a.yref === "paper" && a.yanchor === "bottom" && typeof a.y === "number" && a.y >= 0.99;
    });
    subtitles.forEach(function (a) {
      a.text = wrap(a.text, subChars);
      a.font = Object.assign({}, a.font, { size: 13 });
    });
    var above = subtitles.reduce(function (m, a) { return Math.max(m, String(a.text).split("<br>").length); }, 0);
    if (cols.length) {
      panel = Math.max(260, Math.min(plotHeight, Math.round(width * 0.85)));
      var gapPx = gapBetween(data, layout, cols) + Math.max(0, above - 1) * 16;
      plotHeight = cols.length * panel + (cols.length - 1) * gapPx;
      stack(data, layout, cols, plotHeight, gapPx);
      margin.r = data.some(function (t) { return t.colorbar || /^heatmap/.test(t.type || ""); }) ? 56 : margin.r;
      margin.b = Math.max(margin.b || 0, 90);
    }
    if (layout.meta && layout.meta.wide) {  // labels beside the points: a smaller font fits them in
      data.forEach(function (t) { t.textfont = Object.assign({}, t.textfont, { size: 8 }); });
      var r = layout.xaxis && layout.xaxis.range;
      if (r && r.length === 2) {  // a little more room beside the outer columns for their labels
        var pad = (r[1] - r[0]) * 0.07;
        layout.xaxis = Object.assign({}, layout.xaxis, { range: [r[0] - pad, r[1] + pad] });
      }
      margin.l = 44;
      margin.r = 4;
    }
    var added = wrapAxisTitles(layout, width, margin, panel);
    margin.l += 16 * added.y;
    legendBelow(layout, plotHeight, added.x);
    var chars = Math.max(20, Math.floor((width - 16) / 7.8));  // 14 px sans-serif: about 7.6 px a character
    var text = titleText(layout.title), lines = 0;
    if (text) {
      text = wrap(text, chars);
      lines = text.split("<br>").length;
      layout.title = Object.assign({}, typeof layout.title === "object" ? layout.title : {}, {
        text: text, x: 0, xref: "container", xanchor: "left", y: 1, yref: "container", yanchor: "top",
        pad: { t: TOOLBAR, l: 8 }, font: Object.assign({}, layout.title && layout.title.font, { size: 14 })
      });
    }
    margin.t = TOOLBAR + lines * LINE + above * 16 + 14;
    layout.margin = margin;
    layout.height = plotHeight + margin.t + margin.b;
    return { data: data, layout: layout };
  }

  // Redraw a drawn figure div fitted to its width, or as it was given once the window is wide again.
  // The figure as given is kept on the div the first time it is seen, so a window narrowed (or a
  // phone turned) after the page was drawn refits it from that, not from a figure fitted before:
  // a page opened at 1280 px and narrowed to 390 kept its wide titles past the window's edge.
  var seen = [];
  function remember(div, data, layout) {
    div._contextlensGiven = { data: copy(data), layout: copy(layout), heights: [div, div.parentNode].map(
      function (e) { return e && e.style ? e.style.height : ""; }) };
    div._contextlensWidth = null;  // drawn as given
    seen.push(div);
  }

  // A window resized: each figure kept here drawn once for its new width, by this script's handler
  // below (refitted, or sized again to its box), not by plotly's own resize (config.responsive) and
  // then again refitted. Plotly adds its handler on a draw unless the div has one: after each draw
  // the div is given one that does nothing (and plotly's is taken off the window).
  function ignore() {}
  function own(div) {
    if (div._responsiveChartHandler && div._responsiveChartHandler !== ignore) {
      root.removeEventListener("resize", div._responsiveChartHandler);
    }
    div._responsiveChartHandler = ignore;
  }
  // A drawn figure sized again to its box, as plotly's own handler does (not while hidden).
  function resize(div) {
    if (!div.layout || !div.clientWidth || !root.Plotly) return;
    var done = root.Plotly.Plots.resize(div);
    if (done && done.catch) done.catch(function () {});
  }
  // A figure drawn (again) by Plotly.react at its box's size now: plotly keeps the size it first
  // measured unless told to measure again (and its own resize then drew the figure a second time).
  function redraw(div, data, layout, config) {
    if (div._fullLayout) div._fullLayout._initialAutoSizeIsDone = false;
    var done = config === undefined
      ? root.Plotly.react(div, data, layout) : root.Plotly.react(div, data, layout, config);
    own(div);
    return done;
  }
  function widthFor(div) { return root.innerWidth < NARROW ? (div.clientWidth || root.innerWidth) : null; }
  // The figure to draw at `width` (null: as given), the div marked and sized for it.
  function prepare(div, width) {
    var given = div._contextlensGiven, fig = width === null
      ? { data: copy(given.data), layout: copy(given.layout) } : fitted(given.data, given.layout, width);
    div._contextlensWidth = width;
    if (width === null) div.removeAttribute("data-fitted"); else div.setAttribute("data-fitted", "1");
    [div, div.parentNode].forEach(function (e, i) {  // plotly.py sizes the div and its wrapper itself
      if (e && e.style && given.heights[i]) e.style.height = width === null ? given.heights[i] : fig.layout.height + "px";
    });
    return fig;
  }
  // true where it drew the figure again
  function fitDiv(div) {
    if (!root.Plotly || !div.layout) return false;
    if (!div._contextlensGiven) {
      remember(div, div.data, div.layout);
      own(div);
    }
    var width = widthFor(div);
    if (div._contextlensWidth === width) return false;
    var fig = prepare(div, width);
    redraw(div, fig.data, fig.layout);  // the config it was drawn with is kept
    return true;
  }

  // On a narrow screen a figure that plotly.py's script draws after this script ran (the pages and
  // the HTML report load it in the head, after plotly.js) is fitted before its first draw: drawn
  // once, not as given and then again fitted.
  // fitDiv then finds it fitted.
  // A figure in a hidden box (the lesson's quiz evidence, shown once its question is answered) is
  // not drawn yet: plotly drew it at its default 700 px into a box nobody saw, and again to the
  // box's width once shown. It is drawn once, when ``show`` is told its box is shown.
  var newPlot = root.Plotly && root.Plotly.newPlot;
  if (newPlot) {
    root.Plotly.newPlot = function (gd, data, layout, config) {
      var div = typeof gd === "string" ? document.getElementById(gd) : gd;
      if (div && !div._contextlensGiven && Array.isArray(data) && div.closest && div.closest("[hidden]")) {
        div._contextlensHeld = { data: data, layout: layout, config: config };
        return Promise.resolve(div);
      }
      if (!div || div._contextlensGiven || !Array.isArray(data) || !(root.innerWidth < NARROW)) {
        return newPlot.apply(this, arguments);
      }
      remember(div, data, layout || {});
      var fig = prepare(div, widthFor(div));
      var done = newPlot.call(this, div, fig.data, fig.layout, config);
      own(div);
      return done;
    };
  }

  var pending = null;
  root.addEventListener("resize", function () {  // once the window has settled at its new width
    if (pending) root.clearTimeout(pending);
    pending = root.setTimeout(function () {
      pending = null;
      seen.forEach(function (div) { if (div.isConnected && !fitDiv(div)) resize(div); });
    }, 150);
  });

  // A box just shown (its hidden attribute removed): each figure held back in it drawn now (fitted on a
  // phone, then kept as given for a later change of width, as fitDiv keeps a figure drawn at load),
  // each one drawn before sized again to the box. A promise of the figures drawn now.
  function show(box) {
    var drawn = [];
    box.querySelectorAll(".plotly-graph-div").forEach(function (div) {
      var held = div._contextlensHeld;
      if (held) {
        div._contextlensHeld = null;
        drawn.push(Promise.resolve(root.Plotly.newPlot(div, held.data, held.layout, held.config))
          .then(function () { fitDiv(div); return div; }));
      } else if (div.layout) {
        root.Plotly.Plots.resize(div);
      }
    });
    return Promise.all(drawn);
  }

  root.contextlensFit = {
    fitted: fitted, fitDiv: fitDiv, show: show, redraw: redraw, resize: resize,
    narrow: function () { return root.innerWidth < NARROW; }
  };
})(window);
