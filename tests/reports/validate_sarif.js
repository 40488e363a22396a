// Validates a SARIF file against the official SARIF 2.1.0 schema (shipped in Microsoft's
// @microsoft/jest-sarif package; a draft-04 schema, hence ajv-draft-04). Usage: node validate_sarif.js FILE
const fs = require("fs");
const Ajv = require("ajv-draft-04");
const addFormats = require("ajv-formats");
const schema = require("@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json");
// The schema's language-code pattern is not a valid regular expression in unicode mode.
const ajv = new Ajv({ strict: false, allErrors: true, unicodeRegExp: false });
addFormats(ajv);
const validate = ajv.compile(schema);
const doc = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
if (!validate(doc)) {
  console.log("FAIL SARIF schema: " + JSON.stringify(validate.errors, null, 1));
  process.exit(1);
}
console.log("PASS SARIF 2.1.0 schema: " + doc.runs[0].results.length + " result(s)");
