"""Hardware: the catalogue of resource kinds and the roofline estimator for absent hardware."""

from heterps_core.hardware.catalogue import Catalogue, CatalogueError, ResourceKind
from heterps_core.hardware.defaults import default_catalogue

__all__ = ["Catalogue", "CatalogueError", "ResourceKind", "default_catalogue"]
