// Loaded into every test process by `npm test` (scripts/test.sh: node --test --import ./test/setup/fast-check.ts).
// fast-check generates collections only up to its default `size` ('small': about 10 to 20 elements) even when an
// arbitrary names a larger maxLength, so `fc.array(command, { maxLength: 60 })` would never reach 60 and a model
// test would explore far less than it claims. With this setting an explicit maxLength (or maxKeys, maxCommands…) is
// the real bound; arbitraries without one keep the default size. test/setup/fast-check.test.ts checks it is loaded.
import fc from 'fast-check'

fc.configureGlobal({ ...fc.readConfigureGlobal(), defaultSizeToMaxWhenMaxSpecified: true })
