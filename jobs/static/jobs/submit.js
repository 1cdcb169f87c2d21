// Submit page: offer only the presets of the chosen template that every ticked GPU can serve
// (a replay worker answers only for the workloads in its recording). The server checks again.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", () => {
    const data = JSON.parse(document.getElementById("preset-availability").textContent);
    const form = document.getElementById("job-form");
    const template = form.elements.template, preset = form.elements.preset;
    const labels = new Map([...preset.options].map((o) => [o.value, o.textContent]));

    function update() {
      const gpus = [...form.querySelectorAll("input[name=gpus]:checked")].map((box) => box.value);
      for (const option of preset.options) {
        if (!option.value) continue;
        const ofTemplate = data.templates[option.value] === template.value;
        const missing = gpus.filter((gpu) => data.served[gpu] && !data.served[gpu].includes(option.value));
        option.hidden = !ofTemplate;
        option.disabled = !ofTemplate || missing.length > 0;
        option.textContent = labels.get(option.value) + (ofTemplate && missing.length ? ` (not served by ${missing.join(", ")})` : "");
      }
      for (const group of preset.querySelectorAll("optgroup")) {
        group.hidden = ![...group.children].some((o) => !o.hidden);
      }
      if (preset.selectedOptions.length && preset.selectedOptions[0].disabled) preset.value = "";
    }
    form.addEventListener("change", (event) => {
      if (event.target === template || event.target.name === "gpus") update();
    });
    update();
  });
})();
