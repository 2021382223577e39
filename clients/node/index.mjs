// snowid-client as an ES module: the very objects of the CommonJS entry
// (index.js), so that a program that both imports and requires it sees one
// Client class and one SnowidError.
import snowid from "./index.js";

export const { Client, SnowidError, decodeId, layoutFromInfo, DEFAULTS } = snowid;
