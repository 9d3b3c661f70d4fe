"""The one table of what serves each request method in each era: the features registered by
`core.methods` (`turn.serves`), each served in the eras its row of
`protocol.methods.METHODS` names. A new method is a row there and a feature here; the eras
look methods up in `TABLES` and shape what the feature returns (`ModernEra`, `LegacyEra`).

``initialize`` has a row and no feature: the legacy handshake answers it (`LegacyEra`)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...protocol.methods import LEGACY_ERA, METHODS, MODERN_ERA
from ..framework.call import decoder_for
from .methods import catalog, session, skills, subscriptions, tasks, tools
from .turn import FEATURES, Feature

MODULES = (catalog, session, skills, subscriptions, tasks, tools)
"""The modules whose features are registered (imported for that)."""

TABLES: dict[str, dict[str, Feature]] = {
    era: {method: feature for method, feature in FEATURES.items() if era in METHODS[method].eras}
    for era in (MODERN_ERA, LEGACY_ERA)
}
"""By era, the feature serving each method served in it."""

DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    method: decoder_for(METHODS[method].params) for method in FEATURES
}
"""The params decoder of each method with a feature (`framework.call.decoder_for`)."""
