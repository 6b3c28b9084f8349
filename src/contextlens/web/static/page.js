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
        window.Plotly.react(div, fig.data, fig.layout || {}, doc.config);
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
  }

  // --- the quiz (options shuffled per session by the server): answers kept, a score ----------------------------
  function setupQuiz() {
    var questions = document.querySelectorAll(".question[data-question]");
    if (!questions.length) return;
    var answers = JSON.parse(window.sessionStorage.getItem("contextlens-quiz") || "{}");
    var score = document.getElementById("quiz-score");

    function showScore() {
      var done = Object.keys(answers).length;
      var right = Object.keys(answers).filter(function (q) { return answers[q].correct; }).length;
      if (score) score.textContent = "score: " + right + " right of " + done + " answered (" + questions.length + " questions)";
    }

    function feedback(box, result) {
      var q = box.getAttribute("data-question");
      var out = box.querySelector(".feedback");
      var right = box.querySelector("input[name=a][value='" + result.right_answer + "']");
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
        evidence.hidden = false;
        evidence.querySelectorAll(".plotly-graph-div").forEach(function (d) { if (window.Plotly) window.Plotly.Plots.resize(d); });
      }
      answers[q] = { answer: result.answer, correct: result.correct };
      window.sessionStorage.setItem("contextlens-quiz", JSON.stringify(answers));
      showScore();
    }

    questions.forEach(function (box) {
      var q = box.getAttribute("data-question");
      var form = box.querySelector("form");
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var picked = form.querySelector("input[name=a]:checked");
        if (!picked) return;
        fetch("/api/quiz", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ question: parseInt(q, 10), answer: parseInt(picked.value, 10) })
        }).then(function (r) { return r.json(); }).then(function (result) { feedback(box, result); });
      });
      if (answers[q]) {
        var kept = form.querySelector("input[name=a][value='" + answers[q].answer + "']");
        if (kept) kept.checked = true;
        fetch("/api/quiz", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ question: parseInt(q, 10), answer: answers[q].answer })
        }).then(function (r) { return r.json(); }).then(function (result) { feedback(box, result); });
      }
    });
    var reset = document.getElementById("quiz-reset");
    if (reset) reset.addEventListener("click", function () {
      window.sessionStorage.removeItem("contextlens-quiz");
      window.location.reload();
    });
    showScore();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".plotly-graph-div").forEach(function (d) { showClicked(d); fit(d); labelButtons(d); });
    setupViews();
    setupQuiz();
  });
})();
