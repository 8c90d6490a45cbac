// The resource-type form: picking a catalogue entry fills the fields with its list price
// and specs (the server does the same for fields left empty, so this is a convenience).
(function () {
  const data = document.getElementById("hardware-catalogue");
  const pick = document.getElementById("id_template");
  if (!data || !pick) return;
  const entries = Object.fromEntries(JSON.parse(data.textContent).map((k) => [k.name, k]));
  const fields = ["name", "kind", "price_per_hour", "count", "memory_gb", "network_gbps"];
  pick.addEventListener("change", () => {
    const entry = entries[pick.value];
    if (!entry) return;
    for (const field of fields) {
      const input = document.getElementById(`id_${field}`);
      if (input) input.value = entry[field];
    }
  });
})();
