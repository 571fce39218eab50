/*
 * report_page.h - what the two HTML pages of the report share (report_html.c:
 * one log; report_tree_html.c: a process tree), as string literals to splice
 * into each page's own: the base style, and the script's start (the status
 * element tests read, the embedded JSON as R), its helpers and its end.
 */
#ifndef RP_REPORT_PAGE_H
#define RP_REPORT_PAGE_H

#define RPT_PAGE_CSS \
    "body { font: 14px/1.45 system-ui, -apple-system, \"Segoe UI\", sans-serif; margin: 0; color: #1f2328; background: #f6f8fa; }\n" \
    "header { background: #24292f; color: #fff; padding: 14px 24px; }\n" \
    "header h1 { font-size: 18px; margin: 0 0 4px; font-weight: 600; }\n" \
    "header .sub { color: #c9d1d9; font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }\n" \
    "main { padding: 4px 24px 40px; max-width: 1180px; }\n" \
    "section { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 16px 14px; margin: 16px 0; }\n" \
    "h2 { font-size: 15px; margin: 10px 0 8px; }\n"
#define RPT_PAGE_CSS_TABLES \
    "table { border-collapse: collapse; width: 100%; }\n" \
    "th, td { padding: 3px 8px; text-align: left; border-bottom: 1px solid #eaeef2; vertical-align: top; }\n" \
    "th { font-weight: 600; color: #57606a; font-size: 12px; }\n" \
    "td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }\n" \
    ".code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }\n" \
    "pre { margin: 4px 0; white-space: pre-wrap; word-break: break-all; }\n" \
    ".muted { color: #6e7781; }\n"
#define RPT_PAGE_CSS_CARDS \
    ".cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 6px 0; }\n" \
    ".card { border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 12px; min-width: 140px; }\n" \
    ".card b { display: block; font-size: 17px; }\n" \
    "#status { display: none; }\n"
/* The script starts with R (the JSON in #report-data); any script error
 * sets #status to "error" with its message. */
#define RPT_PAGE_JS_START \
    "(function () {\n" \
    "\"use strict\";\n" \
    "var status = document.getElementById(\"status\");\n" \
    "window.addEventListener(\"error\", function (e) {\n" \
    "  status.setAttribute(\"data-status\", \"error\");\n" \
    "  status.textContent = \"script error: \" + e.message;\n" \
    "});\n" \
    "var R = JSON.parse(document.getElementById(\"report-data\").textContent);\n"
#define RPT_PAGE_JS_EL \
    "function el(tag, attrs, text) {\n" \
    "  var e = document.createElement(tag);\n" \
    "  for (var k in attrs || {}) e.setAttribute(k, attrs[k]);\n" \
    "  if (text !== undefined && text !== null) e.textContent = String(text);\n" \
    "  return e;\n" \
    "}\n"
/* bytes(n): "12.0 MiB", as the text report writes sizes. */
#define RPT_PAGE_JS_BYTES \
    "function bytes(n) {\n" \
    "  if (n < 1024) return n + \" B\";\n" \
    "  var u = [\"KiB\", \"MiB\", \"GiB\", \"TiB\"], i = -1;\n" \
    "  do { n /= 1024; i++; } while (n >= 1024 && i < 3);\n" \
    "  return n.toFixed(1) + \" \" + u[i];\n" \
    "}\n"
/* The end: #status says "rendered" unless an error said otherwise. */
#define RPT_PAGE_JS_END \
    "if (status.getAttribute(\"data-status\") === \"loading\") {\n" \
    "  status.setAttribute(\"data-status\", \"rendered\");\n" \
    "  status.textContent = \"rendered\";\n" \
    "}\n" \
    "})();\n" \
    "</script>\n" \
    "</body>\n" \
    "</html>\n"

#endif
