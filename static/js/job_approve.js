// The approve form: show the fieldset of the chosen runner (pipeline or data-parallel) and,
// for data-parallel, only the chosen sync mode's parameters. Without JS everything shows.
(function () {
  "use strict";
  const form = document.getElementById("approve-options");
  if (!form) return;
  const mode = form.querySelector("[name=dp_mode]");
  function runner() {
    const checked = form.querySelector("[name=runner]:checked");
    return checked ? checked.value : "pipeline";
  }
  function sync() {
    form.querySelectorAll("fieldset.runner").forEach((set) => {
      set.hidden = set.dataset.runner !== runner();
    });
    form.querySelectorAll("fieldset.mode-params").forEach((set) => {
      set.hidden = !mode || set.dataset.mode !== mode.value;
    });
  }
  form.addEventListener("change", sync);
  sync();
})();
