/*
 * report_tree_html.c - the report over several logs as one self-contained
 * page: the verdict, the process tree (each process with its verdict and
 * peaks), the ranks of a distributed job, each process's findings with the
 * stacks of the violation its verdict names, and the totals.  It carries the
 * JSON of report_tree_json.c; nothing is fetched.  When drawing is done the
 * element #status says data-status="rendered" (or "error"), for tests.
 */
#include "report_page.h"
#include "report_tree.h"

#include <stdlib.h>

static const char page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<title>trace-replay report: process tree</title>\n"
    "<style>\n"
    RPT_PAGE_CSS
    RPT_PAGE_CSS_TABLES
    RPT_PAGE_CSS_CARDS
    ".verdict { border-radius: 6px; padding: 8px 12px; border: 1px solid #d0d7de; }\n"
    ".violation { background: #ffebe9; border-color: #ff8182; }\n"
    ".inconclusive { background: #fff8c5; border-color: #d4a72c; }\n"
    ".clean { background: #dafbe1; border-color: #4ac26b; }\n"
    ".badge { display: inline-block; font-size: 11px; font-weight: 600; border-radius: 10px; padding: 0 7px; margin: 0 6px; border: 1px solid; }\n"
    "ul.tree, ul.tree ul { list-style: none; margin: 0; padding-left: 22px; }\n"
    "ul.tree { padding-left: 0; }\n"
    "ul.tree li { margin: 3px 0; }\n"
    "ul.tree ul { border-left: 1px dashed #8c959f; }\n"
    "tr.differs td { background: #ffebe9; }\n"
    "details summary { cursor: pointer; }\n"
    "</style>\n"
    "</head>\n"
    "<body>\n"
    "<header><h1>trace-replay report: process tree</h1><div class=\"sub\" id=\"sub\"></div></header>\n"
    "<main>\n"
    "<div id=\"status\" data-status=\"loading\">loading</div>\n"
    "<section id=\"summary\"><h2>Verdict</h2></section>\n"
    "<section id=\"tree-section\"><h2>Process tree</h2></section>\n"
    "<section id=\"ranks\" hidden><h2>Ranks</h2></section>\n"
    "<section id=\"processes\"><h2>Processes</h2></section>\n"
    "<section id=\"totals\"><h2>Totals</h2></section>\n"
    "</main>\n"
    "<script type=\"application/json\" id=\"report-data\">";

static const char page_tail[] =
    "</script>\n"
    "<script>\n"
    RPT_PAGE_JS_START
    RPT_PAGE_JS_EL
    RPT_PAGE_JS_BYTES
    "var WORD = {violation: \"VIOLATION\", inconclusive: \"INCONCLUSIVE\", clean: \"clean\"};\n"
    "function badge(result) { return el(\"span\", {\"class\": \"badge verdict \" + result}, WORD[result] || result); }\n"
    "function peaks(p) {\n"
    "  var host = p.host_watched ? bytes(p.peak_host) : \"not watched\";\n"
    "  return p.shape === \"device\" ? \"device \" + bytes(p.peak_reserved) + \", host \" + host : \"host \" + host;\n"
    "}\n"
    "function command(p) { return p.cmdline || p.exe || \"(unknown command)\"; }\n"
    "function table(sec, head, rows, numeric, rowClass) {\n"
    "  var t = el(\"table\"), tr = el(\"tr\");\n"
    "  head.forEach(function (h) { tr.appendChild(el(\"th\", {}, h)); });\n"
    "  t.appendChild(tr);\n"
    "  rows.forEach(function (r, j) {\n"
    "    var row = el(\"tr\", rowClass && rowClass[j] ? {\"class\": rowClass[j]} : {});\n"
    "    r.forEach(function (c, i) { row.appendChild(el(\"td\", numeric[i] ? {\"class\": \"num\"} : {}, c)); });\n"
    "    t.appendChild(row);\n"
    "  });\n"
    "  sec.appendChild(t);\n"
    "}\n"
    "\n"
    "function summary() {\n"
    "  document.getElementById(\"sub\").textContent = R.where;\n"
    "  var sec = document.getElementById(\"summary\"), v = R.verdict;\n"
    "  sec.appendChild(el(\"div\", {\"class\": \"verdict \" + v.result, id: \"verdict\"}, \"verdict: \" + v.text));\n"
    "  var t = R.totals, cards = el(\"div\", {\"class\": \"cards\"});\n"
    "  [[\"processes\", t.processes], [\"violation\", t.verdicts.violation], [\"inconclusive\", t.verdicts.inconclusive],\n"
    "   [\"clean\", t.verdicts.clean], [\"events\", t.events]].forEach(function (c) {\n"
    "    var d = el(\"div\", {\"class\": \"card\"});\n"
    "    d.appendChild(el(\"b\", {}, c[1]));\n"
    "    d.appendChild(el(\"span\", {\"class\": \"muted\"}, c[0]));\n"
    "    cards.appendChild(d);\n"
    "  });\n"
    "  sec.appendChild(cards);\n"
    "}\n"
    "\n"
    "function node(i) {\n"
    "  var p = R.processes[i], li = el(\"li\", {id: \"proc-\" + i, \"data-pid\": p.pid});\n"
    "  var a = el(\"a\", {href: \"#detail-\" + i, \"class\": \"code\"}, \"pid \" + p.pid);\n"
    "  li.appendChild(a);\n"
    "  if (p.rank !== null) li.appendChild(el(\"span\", {\"class\": \"muted\"}, \" rank \" + p.rank));\n"
    "  li.appendChild(badge(p.verdict.result));\n"
    "  li.appendChild(el(\"span\", {\"class\": \"code\"}, command(p)));\n"
    "  var rel = p.relation === \"exec\" ? \"exec'd image\" : p.relation === \"root\" && p.ppid ? \"parent \" + p.ppid + \" not traced\" : \"\";\n"
    "  li.appendChild(el(\"span\", {\"class\": \"muted\"}, \"  \" + peaks(p) + (rel ? \"; \" + rel : \"\")));\n"
    "  if (p.children.length) {\n"
    "    var ul = el(\"ul\");\n"
    "    p.children.forEach(function (k) { ul.appendChild(node(k)); });\n"
    "    li.appendChild(ul);\n"
    "  }\n"
    "  return li;\n"
    "}\n"
    "\n"
    "function tree() {\n"
    "  var sec = document.getElementById(\"tree-section\"), ul = el(\"ul\", {\"class\": \"tree\", id: \"tree\"});\n"
    "  R.roots.forEach(function (i) { ul.appendChild(node(i)); });\n"
    "  sec.appendChild(ul);\n"
    "  if (!R.roots.length) sec.appendChild(el(\"p\", {\"class\": \"muted\"}, \"No log could be read.\"));\n"
    "}\n"
    "\n"
    "function ranks() {\n"
    "  var k = R.ranks;\n"
    "  if (!k) return;\n"
    "  var sec = document.getElementById(\"ranks\");\n"
    "  sec.hidden = false;\n"
    "  sec.appendChild(el(\"p\", {\"class\": \"muted\"}, \"By \" + k.ordered_by.replace(/_/g, \" \") + \". A rank differs when a peak is over \" +\n"
    "    k.rule.factor + \"x or under 1/\" + k.rule.factor + \" of the ranks' median and at least \" + bytes(k.rule.min_bytes) +\n"
    "    \" away, or its verdict is worse than most (with at least \" + k.rule.min_ranks + \" ranks).\"));\n"
    "  table(sec, [\"rank\", \"peak device reserved\", \"peak device allocated\", \"peak host buffers\", \"processes\", \"verdict\", \"differs\"],\n"
    "    k.list.map(function (r) {\n"
    "      return [r.rank, bytes(r.peak_reserved), bytes(r.peak_allocated), bytes(r.peak_host), r.processes.length,\n"
    "              WORD[r.verdict], r.why || \"\"];\n"
    "    }), [0, 1, 1, 1, 1, 0, 0], k.list.map(function (r) { return r.differs ? \"differs\" : \"\"; }));\n"
    "}\n"
    "\n"
    "function frames(st) {\n"
    "  var out = [];\n"
    "  (st.py_stack || []).forEach(function (f) { out.push((f.file || \"?\") + \":\" + f.line + \" (\" + (f[\"function\"] || \"?\") + \")\"); });\n"
    "  (st.native_stack || []).filter(function (f) { return f.kind === \"user\"; }).slice(0, 12).forEach(function (f) {\n"
    "    out.push((f[\"function\"] || \"??\") + (f.file ? \" (\" + f.file + \":\" + (f.line || 0) + \")\" : \"\") +\n"
    "             (f.module ? \" \" + f.module.replace(/^.*\\//, \"\") + \"+\" + f.offset : \"\"));\n"
    "  });\n"
    "  return out.join(\"\\n\");\n"
    "}\n"
    "\n"
    "function processes() {\n"
    "  var sec = document.getElementById(\"processes\");\n"
    "  R.order.forEach(function (i) {\n"
    "    var p = R.processes[i], d = el(\"details\", {id: \"detail-\" + i});\n"
    "    if (p.verdict.result !== \"clean\") d.setAttribute(\"open\", \"\");\n"
    "    var s = el(\"summary\");\n"
    "    s.appendChild(el(\"b\", {\"class\": \"code\"}, \"pid \" + p.pid));\n"
    "    s.appendChild(badge(p.verdict.result));\n"
    "    s.appendChild(el(\"span\", {\"class\": \"code\"}, command(p)));\n"
    "    d.appendChild(s);\n"
    "    d.appendChild(el(\"div\", {\"class\": \"muted code\"}, p.log + (p.ending ? \"  (ended: \" + p.ending + \")\" : \"\") +\n"
    "                                                 (p.damage ? \"  damaged: \" + p.damage : \"\")));\n"
    "    d.appendChild(el(\"pre\", {}, p.findings.join(\"\\n\")));\n"
    "    d.appendChild(el(\"div\", {\"class\": \"verdict \" + p.verdict.result}, \"verdict: \" + p.verdict.text));\n"
    "    var r = p.report, f = null;\n"
    "    if (r && r.model_check && r.model_check.violated) f = r.model_check.violation[0];\n"
    "    else if (r && r.violations.length) f = r.violations[0];\n"
    "    if (f && f.at) d.appendChild(el(\"pre\", {}, \"[\" + f.invariant + \"] at seq \" + f.at.seq + \"\\n\" + frames(f.at)));\n"
    "    d.appendChild(el(\"div\", {\"class\": \"muted\"}, \"Its whole report: trace-replay report \" + p.log + \" --html OUT\"));\n"
    "    sec.appendChild(d);\n"
    "  });\n"
    "  R.unreadable.forEach(function (b) { sec.appendChild(el(\"div\", {\"class\": \"verdict violation\"}, \"unreadable: \" + b.log + \": \" + b.error)); });\n"
    "}\n"
    "\n"
    "function totals() {\n"
    "  var t = R.totals, sec = document.getElementById(\"totals\");\n"
    "  table(sec, [\"\", \"\"], [[\"processes\", t.processes], [\"events\", t.events],\n"
    "    [\"sum of peaks (each process's own; they need not have coincided)\", \"device reserved \" + bytes(t.peak_reserved_sum) +\n"
    "     \", allocated \" + bytes(t.peak_allocated_sum) + \", host buffers \" + bytes(t.peak_host_sum)],\n"
    "    [\"held at once, at most (the processes' memory over time added up, per host)\", \"device reserved \" +\n"
    "     bytes(t.peak_reserved_at_once) + \", allocated \" + bytes(t.peak_allocated_at_once) + \", host buffers \" +\n"
    "     bytes(t.peak_host_at_once)],\n"
    "    [\"freed only by collections\", \"device \" + bytes(t.freed_in_collections_device_bytes) + \", host buffers \" +\n"
    "     bytes(t.freed_in_collections_host_bytes)],\n"
    "    [\"double initialisations\", t.double_inits], [\"garbage collections\", t.collections],\n"
    "    [\"violations\", t.violations_total + \" of the model-free checks, \" + t.model_violations + \" pool models broken\"],\n"
    "    [\"logs\", t.damaged_logs + \" damaged, \" + t.logs_without_end + \" without an end record, \" + R.unreadable.length + \" unreadable\"]],\n"
    "    [0, 0]);\n"
    "}\n"
    "\n"
    "summary(); tree(); ranks(); processes(); totals();\n"
    RPT_PAGE_JS_END;

int rpt_tree_print_html(const rpt_tree *t, FILE *out)
{
    FILE *json = tmpfile();
    if (!json)
        return -1;
    int rc = rpt_tree_print_json(t, json);
    fputs(page_head, out);
    rewind(json);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, json)))
        rpt_put_script_safe(buf, n, out);
    if (ferror(json))
        rc = -1;
    fclose(json);
    fputs(page_tail, out);
    return rc || ferror(out) ? -1 : 0;
}
