// build.mjs copies the calendar library's standalone bundle from
// node_modules into dist/, which the Go binary embeds. gpucal's own page
// script and styles (src/) are embedded as they are: no bundler.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, 'node_modules', '@event-calendar', 'build');
const dist = join(here, 'dist');
mkdirSync(dist, { recursive: true });
for (const f of ['event-calendar.min.js', 'event-calendar.min.css']) {
  copyFileSync(join(pkg, 'dist', f), join(dist, f));
}
const { version, license } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
writeFileSync(join(dist, 'VERSION'), `@event-calendar/build ${version} (${license})\n`);
console.log(`web/ui/dist: @event-calendar/build ${version}`);
