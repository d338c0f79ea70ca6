// Keyboard rating for divmeter annotate: digits fill the 1-5 questions in order.
// No framework; the forms work without this file (plain radio buttons and a submit button).
(function () {
  "use strict";
  function scales(form) { return Array.prototype.slice.call(form.querySelectorAll("fieldset.scale")); }
  function answered(fs) { return fs.querySelector("input[type=radio]:checked") !== null; }
  function mark(form) {
    var first = null;
    scales(form).forEach(function (fs) {
      fs.classList.remove("active");
      if (!first && !answered(fs)) { first = fs; }
    });
    if (first) { first.classList.add("active"); }
    return first;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("form#answer-form, form#warmup-form");
    if (!form) { return; }
    mark(form);
    form.addEventListener("change", function () { mark(form); });
    var submitted = false;
    form.addEventListener("submit", function (ev) {
      if (submitted) { ev.preventDefault(); return; }  // no double submission
      submitted = true;
    });
    document.addEventListener("keydown", function (ev) {
      var t = ev.target;
      if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
      if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "radio"))) { return; }
      if (/^[1-9]$/.test(ev.key)) {
        var fs = mark(form);
        if (!fs) { return; }
        var input = fs.querySelector("input[type=radio][value='" + ev.key + "']");
        if (!input) { return; }
        input.checked = true;
        input.focus();
        ev.preventDefault();
        mark(form);
      } else if (ev.key === "Backspace") {
        var done = scales(form).filter(answered);
        if (done.length) {
          done[done.length - 1].querySelector("input:checked").checked = false;
          ev.preventDefault();
          mark(form);
        }
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        if (form.reportValidity()) { form.requestSubmit(); }
      }
    });
  });
})();
