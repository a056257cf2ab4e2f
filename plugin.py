"""Entry point of the component plugin (PulumiPlugin.yaml): hosts the package's components so
a program in any Pulumi language can use them after `pulumi package add <this directory>`."""

from pulumi.provider.experimental import component_provider_host

from components.package import COMPONENTS, PACKAGE, VERSION

if __name__ == "__main__":
    component_provider_host(COMPONENTS, PACKAGE, version=VERSION)
