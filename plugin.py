"""Entry point of the component plugin (PulumiPlugin.yaml): hosts the package's components so
a program in any Pulumi language can use them after `pulumi package add <this directory>`."""

from pulumi.provider.experimental import component_provider_host

from inference_platform import PACKAGE, VERSION, component_classes

if __name__ == "__main__":
    component_provider_host(component_classes(), PACKAGE, version=VERSION)
