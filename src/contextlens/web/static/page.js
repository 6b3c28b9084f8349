// contextlens pages: redraw a view in the page (no reload per step), the quiz, a clicked cell's text.
// Served from the package at /static/page.js; nothing here loads anything from anywhere else.
(function () {
  "use strict";

  function showClicked(div) {
    if (!div.on) return;
    div.on("plotly_click", function (ev) {
      var p = ev.points[0];
      var t = p.text || p.hovertext;
      if (t) document.getElementById("clicked").innerHTML = t;
    });
  }

  // --- keyboard and screen readers: each modebar button says what it does ----------------------
  function labelButtons(div) {
    div.querySelectorAll(".modebar-btn").forEach(function (b) {
      if (!b.getAttribute("aria-label") && b.getAttribute("data-title")) b.setAttribute("aria-label", b.getAttribute("data-title"));
    });
  }

  // --- phones: each figure fitted to the width (panels stacked, title below the toolbar): reports/fit.js ---
  function fit(div) {
    if (window.contextlensFit) window.contextlensFit.fitDiv(div);
  }

  // --- views: every layer / head the page may show, drawn on demand ---------------------------
  function setupViews() {
    var el = document.getElementById("views");
    if (!el) return;
    var doc = JSON.parse(el.textContent);
    var drawn = {};  // div index -> figure index drawn there
    var controls = doc.controls.map(function (name) { return document.getElementById("f-" + name); });
    var note = document.getElementById("view-note");

    function key() {
      return doc.controls.map(function (name, i) { return name + "=" + controls[i].value; }).join("&");
    }

    function draw() {
      var view = doc.views[key()];
      if (!view) {
        if (note) note.textContent = "this setting is not in the page: press Run";
        return;
      }
      if (note) note.textContent = "";
      view.figures.forEach(function (f, i) {
        var div = document.getElementById("view-fig-" + i);
        if (!div || drawn[i] === f) return;
        var fig = doc.figures[f];
        if (window.contextlensFit) fig = window.contextlensFit.fitted(fig.data, fig.layout, div.clientWidth || window.innerWidth);
        if (window.contextlensFit) window.contextlensFit.redraw(div, fig.data, fig.layout || {}, doc.config);
        else window.Plotly.react(div, fig.data, fig.layout || {}, doc.config);
        if (drawn[i] === undefined) showClicked(div);
        labelButtons(div);
        drawn[i] = f;
      });
      document.getElementById("view-numbers").innerHTML = doc.numbers[view.numbers];
      var url = new URL(window.location.href);
      doc.controls.forEach(function (name, i) { url.searchParams.set(name, controls[i].value); });
      window.history.replaceState(null, "", url.toString());
      ["json-link", "png-link"].forEach(function (id) {
        var a = document.getElementById(id);
        if (a) a.setAttribute("href", a.getAttribute("href").split("?")[0] + url.search);
      });
    }

    controls.forEach(function (c) {
      if (!c) return;
      c.removeAttribute("onchange");
      c.addEventListener("input", function () {
        var out = c.nextElementSibling;
        if (out && out.tagName === "OUTPUT") out.value = c.value;
        draw();
      });
    });
    draw();
    // a window narrowed or widened: the shown figures drawn again for its width (fit.js), once: not
    // also by plotly's own resize (fit.js's own); wide before and now, each only sized to its box
    var settle = null;
    var wide = !(window.contextlensFit && window.contextlensFit.narrow()), shownAt = window.innerWidth;
    window.addEventListener("resize", function () {
      if (settle) window.clearTimeout(settle);
      settle = window.setTimeout(function () {
        var nowWide = !(window.contextlensFit && window.contextlensFit.narrow());
        if (nowWide && wide || window.innerWidth === shownAt) {  // wide before and now: drawn as given
          Object.keys(drawn).forEach(function (i) {
            var div = document.getElementById("view-fig-" + i);
            if (div && window.contextlensFit) window.contextlensFit.resize(div);
          });
          return;
        }
        wide = nowWide;
        shownAt = window.innerWidth;
        drawn = {};
        draw();
      }, 150);
    });
  }

  // --- the quiz (options shuffled per session by the server): answers kept, scored by the server --------------
  // One form: without scripts it sends every picked answer and the server marks them and scores
  // (lesson.score); here a Check asks /api/quiz for that question and /api/quiz-score for the score.
  function post(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body)
    }).then(function (r) { return r.json(); });
  }

  function setupQuiz() {
    var form = document.getElementById("quiz-form");
    var questions = document.querySelectorAll(".question[data-question]");
    if (!form || !questions.length) return;
    var answers = JSON.parse(window.sessionStorage.getItem("contextlens-quiz") || "{}");
    var score = document.getElementById("quiz-score");

    function showScore() {
      var given = {};
      Object.keys(answers).forEach(function (q) { given[q] = answers[q].answer; });
      if (!Object.keys(given).length) { if (score) score.textContent = ""; return; }
      post("/api/quiz-score", { answers: given }).then(function (s) { if (score && s.line) score.textContent = s.line; });
    }

    function picked(box) {
      var q = box.getAttribute("data-question");
      var p = box.querySelector("input[name=a" + q + "]:checked");
      return p ? parseInt(p.value, 10) : null;
    }

    function feedback(box, result) {
      var q = box.getAttribute("data-question");
      var out = box.querySelector(".feedback");
      var right = box.querySelector("input[name=a" + q + "][value='" + result.right_answer + "']");
      var label = right ? right.parentNode.textContent.trim() : "";
      out.innerHTML = "";
      var verdict = document.createElement("p");
      verdict.id = "verdict";
      verdict.className = result.correct ? "ok" : "error";
      verdict.textContent = result.correct ? "Right." : "Not quite: the answer is “" + label + "”.";
      var why = document.createElement("p");
      why.textContent = result.explanation;
      out.appendChild(verdict);
      out.appendChild(why);
      var evidence = box.querySelector(".evidence");
      if (evidence) {
        evidence.hidden = false;  // its figure drawn now, not while it was hidden (fit.js)
        if (window.contextlensFit) {
          window.contextlensFit.show(evidence).then(function (drawn) {
            drawn.forEach(function (d) { showClicked(d); labelButtons(d); });
          });
        } else {  // without fit.js plotly drew it while hidden: sized to its box now
          evidence.querySelectorAll(".plotly-graph-div").forEach(function (d) { if (window.Plotly) window.Plotly.Plots.resize(d); });
        }
      }
      answers[q] = { answer: result.answer, correct: result.correct };
      window.sessionStorage.setItem("contextlens-quiz", JSON.stringify(answers));
    }

    function check(box) {
      var a = picked(box);
      if (a === null) return Promise.resolve();
      var q = parseInt(box.getAttribute("data-question"), 10);
      return post("/api/quiz", { question: q, answer: a }).then(function (result) { feedback(box, result); });
    }

    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var by = ev.submitter;
      var boxes = [].slice.call(questions);
      if (by && by.name === "check") boxes = boxes.filter(function (b) { return b.getAttribute("data-question") === by.value; });
      Promise.all(boxes.map(check)).then(showScore);
    });

    var restored = [];
    questions.forEach(function (box) {
      var q = box.getAttribute("data-question");
      if (box.hasAttribute("data-answered")) {  // marked by the server (a form sent without scripts, a link)
        answers[q] = { answer: parseInt(box.getAttribute("data-answered"), 10), correct: box.getAttribute("data-correct") === "1" };
        window.sessionStorage.setItem("contextlens-quiz", JSON.stringify(answers));
        return;
      }
      if (!answers[q]) return;
      var kept = box.querySelector("input[name=a" + q + "][value='" + answers[q].answer + "']");
      if (kept) kept.checked = true;
      restored.push(check(box));
    });
    var reset = document.getElementById("quiz-reset");
    if (reset) reset.addEventListener("click", function () { window.sessionStorage.removeItem("contextlens-quiz"); });
    Promise.all(restored).then(showScore);
  }

  // --- long work: the page came first (web/deferred.py); its status line counts, the result follows ---
  function setupFigures(root) {
    root.querySelectorAll(".plotly-graph-div").forEach(function (d) { showClicked(d); fit(d); labelButtons(d); });
  }

  function setupDeferred() {
    var status = document.getElementById("work-status");
    var box = document.getElementById("deferred-result");
    if (!status || !box || !status.getAttribute("data-result")) return;
    var began = Date.now();
    var tick = window.setInterval(function () {
      status.textContent = "computing… " + Math.round((Date.now() - began) / 1000) + " s (the result appears here when it is ready)";
    }, 1000);
    fetch(status.getAttribute("data-result"), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        window.clearInterval(tick);
        box.innerHTML = text;
        var scripts = Array.prototype.slice.call(box.querySelectorAll("script"));
        // a result in parts (the lesson): each data-slot's content moves into the page's element of that id
        var roots = [box];
        box.querySelectorAll("[data-slot]").forEach(function (part) {
          var target = document.getElementById(part.getAttribute("data-slot"));
          if (!target) return;
          while (part.firstChild) target.appendChild(part.firstChild);
          part.remove();
          roots.push(target);
        });
        // scripts set by innerHTML do not run: each is replaced by a copy, run in order
        scripts.forEach(function (old) {
          var s = document.createElement("script");
          if (old.type) s.type = old.type;
          if (old.id) s.id = old.id;
          s.textContent = old.textContent;
          old.replaceWith(s);
        });
        status.textContent = "done in " + Math.round((Date.now() - began) / 1000) + " s";
        status.removeAttribute("data-result");
        roots.forEach(setupFigures);
        setupViews();
        if (roots.length > 1) setupQuiz();  // the lesson's quiz came with its parts
      })
      .catch(function (e) { window.clearInterval(tick); status.textContent = "error: " + e; status.className = "error"; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupFigures(document);
    setupViews();
    setupQuiz();
    setupDeferred();
  });
})();
