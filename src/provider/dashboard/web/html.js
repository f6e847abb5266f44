// The one place the page binds htm to preact: every module renders through `html`, whose
// interpolations are text (escaped by preact), so a string a tenant controls can never
// become markup. Nothing here sets innerHTML or dangerouslySetInnerHTML.
import htm from "htm";
import { h, render } from "preact";

export const html = htm.bind(h);
export { useEffect, useRef, useState } from "preact/hooks";
export { render };
