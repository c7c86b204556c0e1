// GroupTargets: what `--to` names when a cast plays on several devices at once — `--to` given again, or the name of a
// group the person keeps (`route group`).

import RouteCore

extension GroupTargets {
    /// The targets of `parsed`'s `--to`; nil when it names one device or none.
    package init?(_ parsed: ParsedArguments) { self.init(queries: parsed.all("to")) }
}
