from . import urls_pages, urls_transfer

urlpatterns = urls_pages.urlpatterns + urls_transfer.urlpatterns
