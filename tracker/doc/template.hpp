#pragma once
// The A/B document's starting text: a mustache template filled from the plan.
#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace abtrack::doc {

// The built-in template (the text of templates/ab.md, compiled in).
std::string_view default_template();

// Fills `tpl` from the plan: {{{title}}}, {{{experiment}}}, {{{what}}}, {{{why}}}, {{{how}}},
// {{{command}}}, {{{where}}} (where the command runs: "from the repository root", "from `bench`
// in the repository", or for a plan with revisions each revision's own checkout), {{{axes}}},
// {{{excluded}}}, {{{prediction}}}, {{{baseline}}}, {{{gates}}}, {{{doc}}}. `name` names the template in messages.
// Throws Error(usage) for a template that does not parse or has no abtrack region.
std::string render_template(std::string_view tpl, const plan::Plan& plan, const std::string& name);

}  // namespace abtrack::doc
